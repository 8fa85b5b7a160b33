"""SeekerGym corpora: HTML/Wikipedia/JSONL builders, the paper's filters at their edges,
deterministic save/load, and the pinned pydocs demo corpus (when python3.11-doc is installed)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sgrgym.core.errors import UserError
from sgrgym.seeker.corpus import (
    Corpus,
    CorpusFileError,
    CorpusFilter,
    CorpusSource,
    Document,
    ExtractOptions,
    build_corpus,
    corpus_bytes,
    corpus_stats,
    filter_documents,
    html_document,
    import_jsonl,
    load_corpus,
    make_document,
    merge_paragraphs,
    render_stats,
    save_corpus,
    wikipedia_document,
)
from sgrgym.seeker.pydocs import (
    DEFAULT_DOC_ROOT,
    PINNED_VERSION,
    PydocsSelection,
    build_pydocs_corpus,
    check_installed,
    installed_version,
    load_manifest,
    parse_page,
    topic_of,
    verify_corpus,
)

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "tasks" / "seeker" / "pydocs" / "manifest.json"

# Sentences written for these tests; each is long enough to survive the fragment filter.
LONG = "The lighthouse keeper logged the passing ships and the weather every evening."


def words(n_chars: int, seed: str = "x") -> str:
    """A text of exactly ``n_chars`` characters (so tokens = n_chars // 4)."""
    base = (seed + " lorem ipsum ") * (n_chars // 8 + 2)
    return base[:n_chars].rstrip() + "." * (n_chars - len(base[:n_chars].rstrip()))


# --------------------------------------------------------------------------------------------
# Generic HTML

PAGE = f"""<!doctype html>
<html><head><title>Harbour Lights | Coastal Wiki</title>
<style>body {{ color: red }}</style><script>var tracking = "this is not text";</script></head>
<body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/about">About us</a></li></ul></nav>
<header><a href="/">Coastal Wiki logo and tagline here</a></header>
<main>
<h1>Harbour lights of the north coast</h1>
<p>Harbour lights guide fishing boats home after dark along rocky shores.
<p>Most of them were built in the nineteenth century from local granite.
<div class="toc"><p>Contents of this page listed here</p></div>
<ul><li><a href="#history">History of the lights</a></li>
<li><a href="#keepers">Keepers</a></li></ul>
<h2 id="history">History</h2>
<p>{LONG}</p>
<figure><img src="a.png"><figcaption>A lighthouse photographed at dusk from the pier</figcaption>
</figure>
<p>Figure 2: The lamp room seen from below, with its brass fittings.</p>
<pre>lamp.on()  # a code block that must not become a passage</pre>
<table><tr><td>Year built and the height of the tower in metres</td></tr></table>
<h3>Early lamps</h3>
<p>Early lamps burned whale oil and needed trimming several times a night.</p>
<p>ok then</p>
<dl><dt>Fresnel lens</dt>
<dd><p>A lens of concentric rings that throws the beam far out to sea.</p></dd></dl>
<ul><li>Keepers polished the lenses each morning before breakfast.</li>
<li>Visitors were rarely allowed to climb the narrow staircase.</li></ul>
<p hidden>A hidden paragraph that a screen never shows to readers.</p>
<h2>Keepers</h2>
<p>Keepers lived in small cottages next to the tower with their families.</p>
<h2>References</h2>
<p>Smith, J. A book about lights and harbours. Seaside Press, 1990.</p>
<h2>Automation</h2>
<h4>Remote control</h4>
<p>Since the nineteen-eighties the lights have been switched on remotely.</p>
</main>
<footer><p>Copyright 2024 Coastal Wiki. All rights reserved.</p>
<p>Privacy policy and terms of use apply to this site.</p></footer>
</body></html>"""


def test_html_document_title_abstract_sections() -> None:
    doc = html_document(PAGE, "harbour", "coast")
    assert doc.id == "harbour" and doc.topic == "coast"
    assert doc.title == "Harbour lights of the north coast"
    assert doc.abstract == (
        "Harbour lights guide fishing boats home after dark along rocky shores.\n\n"
        "Most of them were built in the nineteenth century from local granite."
    )
    got = [(p.id, p.order, p.section, p.text) for p in doc.passages]
    assert got == [
        ("p1", 0, ("History",), LONG),
        (
            "p2",
            1,
            ("History", "Early lamps"),
            "Early lamps burned whale oil and needed trimming several times a night.",
        ),
        (
            "p3",
            2,
            ("History", "Early lamps"),
            "Fresnel lens\nA lens of concentric rings that throws the beam far out to sea.",
        ),
        (
            "p4",
            3,
            ("History", "Early lamps"),
            "Keepers polished the lenses each morning before breakfast.",
        ),
        (
            "p5",
            4,
            ("History", "Early lamps"),
            "Visitors were rarely allowed to climb the narrow staircase.",
        ),
        (
            "p6",
            5,
            ("Keepers",),
            "Keepers lived in small cottages next to the tower with their families.",
        ),
        (
            "p7",
            6,
            ("Automation",),
            "Since the nineteen-eighties the lights have been switched on remotely.",
        ),
    ]
    assert all(p.tokens == len(p.text) // 4 for p in doc.passages)
    assert doc.sections == [("History",), ("History", "Early lamps"), ("Keepers",), ("Automation",)]
    assert doc.passage("p6").section == ("Keepers",)
    with pytest.raises(UserError, match="no passage 'p99'"):
        doc.passage("p99")


def test_html_boilerplate_is_removed() -> None:
    doc = html_document(PAGE, "harbour", "coast")
    text = doc.abstract + "\n".join(p.text for p in doc.passages)
    for gone in (
        "Home",  # navigation
        "logo",  # page header
        "tracking",  # script
        "color",  # style
        "Contents of this page",  # table of contents
        "History of the lights",  # link-only list (in-page TOC)
        "photographed at dusk",  # figure caption
        "Figure 2",  # caption-like paragraph
        "lamp.on",  # code block
        "height of the tower",  # table
        "ok then",  # very short fragment
        "hidden paragraph",
        "Seaside Press",  # the References section
        "Copyright",  # footer
        "Privacy",
    ):
        assert gone not in text, gone


def test_title_falls_back_to_title_element() -> None:
    html = f"<html><head><title>Only a title</title></head><body><p>{LONG}</p></body></html>"
    assert html_document(html, "d", "t").title == "Only a title"


def test_section_depth_and_skipped_levels() -> None:
    html = (
        f"<body><h1>T</h1><p>{LONG}</p><h2>A</h2><h4>C</h4><p>{LONG}</p>"
        f"<h3>B</h3><p>{LONG}</p><h2>D</h2><p>{LONG}</p></body>"
    )
    deep = html_document(html, "d", "t", ExtractOptions(section_depth=3))
    assert [p.section for p in deep.passages] == [("A", "C"), ("A", "B"), ("D",)]
    flat = html_document(html, "d", "t", ExtractOptions(section_depth=1))
    assert [p.section for p in flat.passages] == [("A",), ("A",), ("D",)]


def test_header_with_the_title_is_kept() -> None:
    html = (
        "<body><header><a href='/'>Site logo text and tagline</a></header><article><header>"
        f"<h1>Tide mills</h1><p>{LONG}</p></header><h2>S</h2><p>{LONG}</p></article></body>"
    )
    doc = html_document(html, "d", "t")
    assert (doc.title, doc.abstract, doc.n_passages) == ("Tide mills", LONG, 1)


def test_boilerplate_wording_only_judges_short_fragments() -> None:
    long_cookie = "Cookies were baked in the lighthouse kitchen " + "every single day " * 12
    html = f"<body><h1>T</h1><p>{LONG}</p><h2>Food</h2><p>{long_cookie}</p><p>Accept cookies</p>"
    doc = html_document(html, "d", "t")
    assert [p.text for p in doc.passages] == [long_cookie.strip()]


def test_fragment_threshold_is_configurable() -> None:
    html = f"<body><h1>T</h1><p>{LONG}</p><h2>S</h2><p>tiny bit</p><p>{LONG}</p></body>"
    assert html_document(html, "d", "t").n_passages == 1
    loose = html_document(html, "d", "t", ExtractOptions(min_fragment_chars=0))
    assert [p.text for p in loose.passages] == ["tiny bit", LONG]


def test_merge_paragraphs_within_sections() -> None:
    a, b = ("A",), ("B",)
    blocks = [(a, "x" * 100), (a, "y" * 100), (a, "z" * 200), (a, "w" * 8), (b, "v" * 40)]
    merged = merge_paragraphs(blocks, 48)
    assert merged == [
        (a, "x" * 100 + "\n\n" + "y" * 100),  # 202 chars -> 50 tokens
        (a, "z" * 200 + "\n\n" + "w" * 8),  # the short rest joins the previous passage
        (b, "v" * 40),  # a section that stays short remains one passage
    ]
    assert merge_paragraphs(blocks, 0) == blocks
    merged_html = html_document(
        f"<body><h1>T</h1><p>{LONG}</p><h2>S</h2><p>{LONG}</p><p>{LONG}</p><p>{LONG}</p></body>",
        "d",
        "t",
        ExtractOptions(merge_min_tokens=30),
    )
    # 19 + 19 tokens reach 30; the third paragraph's rest joins that passage
    assert [p.text.count("lighthouse") for p in merged_html.passages] == [3]


# --------------------------------------------------------------------------------------------
# Wikipedia (Parsoid / REST HTML)

PARSOID = """<!DOCTYPE html>
<html prefix="dc: http://purl.org/dc/terms/"><head><meta charset="utf-8"/>
<title>Granite Point Light</title><link rel="stylesheet" href="/w/load.php"/></head>
<body class="mw-content-ltr mw-parser-output" lang="en">
<section data-mw-section-id="0" id="mwAQ">
<div role="note" class="hatnote navigation-not-searchable">For the village, see Granite Point.</div>
<span class="shortdescription">Lighthouse on a northern cape</span>
<table class="infobox"><tr><th>Height</th><td>31 metres of stone and iron</td></tr></table>
<p id="mwAg"><b>Granite Point Light</b> is a lighthouse on a cape facing the northern
sea.<sup about="#mwt3" class="mw-ref reference" typeof="mw:Extension/ref"><a href="#cite_note-1">
<span class="mw-reflink-text">[1]</span></a></sup> It was first lit in the winter of its
completion.</p>
<p>The tower is painted with red and white bands so sailors can spot it by day.</p>
</section>
<section data-mw-section-id="1" id="mwBA"><h2 id="History">History</h2>
<span class="mw-editsection">edit</span>
<p>Construction began after several ships were wrecked on the reef below the cape.</p>
<figure typeof="mw:File/Thumb"><a href="./File:Light.jpg"><img src="x.jpg"/></a>
<figcaption>The light in a winter storm, seen from the harbour wall</figcaption></figure>
<section data-mw-section-id="2" id="mwBQ"><h3 id="Keepers">Keepers</h3>
<p>Three families kept the light over its first century of service.</p>
</section></section>
<section data-mw-section-id="3"><h2 id="See_also">See also</h2>
<ul><li><a href="./Other_light">Some other lighthouse on the coast</a></li>
<li>A list entry written as plain text on purpose here</li></ul></section>
<section data-mw-section-id="4"><h2 id="References">References</h2>
<div class="mw-references-wrap">
<ol class="mw-references references" typeof="mw:Extension/references">
<li id="cite_note-1">A guidebook to northern lighthouses, volume two, 1987.</li></ol></div>
</section>
<section data-mw-section-id="5"><h2 id="Legacy">Legacy</h2>
<p>The old lens is now shown in the maritime museum in the nearby town.</p>
<div role="navigation" class="navbox"><p>Lighthouses of the northern coast navigation box</p></div>
</section>
</body></html>"""


def test_wikipedia_document() -> None:
    doc = wikipedia_document(PARSOID, "granite-point", "lighthouses")
    assert doc.title == "Granite Point Light"
    assert doc.abstract == (
        "Granite Point Light is a lighthouse on a cape facing the northern sea. It was first lit "
        "in the winter of its completion.\n\n"
        "The tower is painted with red and white bands so sailors can spot it by day."
    )
    assert [(p.section, p.text) for p in doc.passages] == [
        (
            ("History",),
            "Construction began after several ships were wrecked on the reef below the cape.",
        ),
        (
            ("History", "Keepers"),
            "Three families kept the light over its first century of service.",
        ),
        (("Legacy",), "The old lens is now shown in the maritime museum in the nearby town."),
    ]
    text = doc.abstract + " ".join(p.text for p in doc.passages)
    for gone in (
        "[1]",
        "village",
        "northern cape",
        "31 metres",
        "edit",
        "winter storm",
        "plain text on purpose",
        "guidebook",
        "navigation box",
    ):
        assert gone not in text, gone


# --------------------------------------------------------------------------------------------
# Filters, each threshold at its edge


def doc_with(
    n_passages: int = 12, short: int = 0, abstract_chars: int = 400, doc_id: str = "d"
) -> Document:
    long_text = words(48 * 4)  # exactly 48 tokens: not short
    short_text = words(47 * 4 + 3)  # 191 chars: 47 tokens, short
    texts = [short_text] * short + [long_text] * (n_passages - short)
    return make_document(doc_id, "T", words(abstract_chars), "topic", ((("S",), t) for t in texts))


def test_passage_token_edge() -> None:
    doc = doc_with(n_passages=2, short=1)
    assert [p.tokens for p in doc.passages] == [47, 48]
    assert doc.short_passages() == 1


@pytest.mark.parametrize(
    ("doc", "ok"),
    [
        (doc_with(n_passages=12), True),
        (doc_with(n_passages=11), False),
        (doc_with(n_passages=12, short=1), True),  # 1/12 = 0.083 < 0.1
        (doc_with(n_passages=20, short=2), False),  # 2/20 = 0.1 is not below 0.1
        (doc_with(n_passages=21, short=2), True),  # 2/21 = 0.095
        (doc_with(abstract_chars=256), True),  # 64 tokens
        (doc_with(abstract_chars=255), False),  # 63 tokens
        (doc_with(abstract_chars=4099), True),  # 1024 tokens
        (doc_with(abstract_chars=4100), False),  # 1025 tokens
    ],
)
def test_filter_edges(doc: Document, ok: bool) -> None:
    assert CorpusFilter().passes(doc) is ok


def test_filter_is_configurable_and_reports_reasons() -> None:
    doc = doc_with(n_passages=5, short=5, abstract_chars=40)
    problems = CorpusFilter().problems(doc)
    assert len(problems) == 3
    assert "5 passages (minimum 12)" in problems[0]
    assert "short-passage ratio 1.000" in problems[1]
    assert "abstract of 10 tokens" in problems[2]
    loose = CorpusFilter(min_passages=5, short_tokens=10, min_abstract_tokens=10)
    assert loose.passes(doc)
    result = filter_documents([doc, doc_with(doc_id="e")], CorpusFilter())
    assert [d.id for d in result.kept] == ["e"] and list(result.rejected) == ["d"]
    corpus, _ = build_corpus("c", [doc, doc_with(doc_id="e")], CorpusSource(kind="test"))
    assert [d.id for d in corpus.documents] == ["e"]


def test_document_and_corpus_validation() -> None:
    good = doc_with(n_passages=2)
    with pytest.raises(ValueError, match="expected id 'p2'"):
        Document(
            id="d",
            title="T",
            abstract="",
            topic="t",
            passages=(good.passages[0], good.passages[0]),
        )
    with pytest.raises(ValueError, match="duplicate document id 'd'"):
        Corpus(name="c", source=CorpusSource(kind="test"), documents=(good, good))


def test_corpus_stats_table() -> None:
    corpus = Corpus(
        name="c",
        source=CorpusSource(kind="test"),
        documents=(doc_with(n_passages=12, doc_id="a"), doc_with(n_passages=14, doc_id="b")),
    )
    stats = corpus_stats(corpus)
    assert (stats.documents, stats.clusters, stats.passages) == (2, 1, 26)
    assert stats.passages_per_document.mean == 13.0
    assert stats.tokens_per_passage.median == 48.0
    assert stats.abstract_tokens.mean == 100.0
    table = render_stats(stats, "c", by_cluster=True)
    assert "Passages / document" in table and "topic" in table


# --------------------------------------------------------------------------------------------
# JSONL import and save/load


def record(doc_id: str = "d1", **overrides: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": doc_id,
        "title": "Tide tables",
        "abstract": "How the tides are predicted for the harbour.",
        "topic": "sea",
        "passages": [
            {"section": ["Basics"], "text": "High water comes about twice a day."},
            {"section": ["Basics", "Moon"], "text": "The moon's pull shapes the tide."},
        ],
    }
    rec.update(overrides)
    return rec


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_import_jsonl(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "tides.jsonl", [json.dumps(record()), "", json.dumps(record("d2"))]
    )
    corpus = import_jsonl(path)
    assert corpus.name == "tides" and corpus.source.kind == "jsonl"
    doc = corpus.document("d1")
    assert [(p.id, p.section) for p in doc.passages] == [
        ("p1", ("Basics",)),
        ("p2", ("Basics", "Moon")),
    ]
    assert import_jsonl(path, name="other").name == "other"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{not json", "line 2: not valid JSON"),
        (json.dumps({k: v for k, v in record().items() if k != "topic"}), "line 2: field topic:"),
        (
            json.dumps(
                record(passages=[{"section": ["A"], "text": "ok text"}, {"section": ["A"]}])
            ),
            "line 2: field passages[1].text:",
        ),
        (
            json.dumps(record(passages=[{"section": "A", "text": "a text"}])),
            "line 2: field passages[0].section:",
        ),
        (json.dumps(record(colour="blue")), "line 2: field colour: Extra inputs"),
        (json.dumps(record(title=5)), "line 2: field title:"),
        (
            json.dumps(record("d1")),
            "line 2: field id: duplicate document id 'd1' (first on line 1)",
        ),
        (
            json.dumps(record(passages=[{"id": "p7", "section": [], "text": "some text"}])),
            "line 2: field passages[0].id: 'p7' should be 'p1'",
        ),
        ("[1, 2]", "line 2: field (record):"),
    ],
)
def test_import_errors_name_file_line_field(tmp_path: Path, line: str, expected: str) -> None:
    path = write_lines(tmp_path / "bad.jsonl", [json.dumps(record()), line])
    with pytest.raises(CorpusFileError) as info:
        import_jsonl(path)
    assert f"{path} {expected}" in str(info.value)


def test_import_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="corpus file not found"):
        import_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(CorpusFileError, match="no documents"):
        import_jsonl(write_lines(tmp_path / "empty.jsonl", [""]))
    (tmp_path / "latin.jsonl").write_bytes(b"\xff\xfe")
    with pytest.raises(UserError, match="not UTF-8"):
        import_jsonl(tmp_path / "latin.jsonl")


def test_save_load_round_trip_is_byte_identical(tmp_path: Path) -> None:
    corpus = import_jsonl(
        write_lines(tmp_path / "in.jsonl", [json.dumps(record()), json.dumps(record("d2"))])
    )
    first = save_corpus(corpus, tmp_path / "a.jsonl")
    loaded = load_corpus(tmp_path / "a.jsonl")
    assert loaded == corpus
    second = save_corpus(loaded, tmp_path / "b.jsonl")
    assert first == second
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    # key order of the input does not matter; non-ASCII text is kept as UTF-8
    shuffled = json.dumps(dict(reversed(list(record(title="Gezeiten – Tabellen").items()))))
    again = import_jsonl(write_lines(tmp_path / "in2.jsonl", [shuffled, json.dumps(record("d2"))]))
    data = corpus_bytes(again)
    assert "Gezeiten – Tabellen".encode() in data
    assert data.count(b"\n") == 3 and not data.endswith(b"\n\n")


def test_load_corpus_errors(tmp_path: Path) -> None:
    corpus = import_jsonl(write_lines(tmp_path / "in.jsonl", [json.dumps(record())]))
    save_corpus(corpus, tmp_path / "c.jsonl")
    lines = (tmp_path / "c.jsonl").read_text(encoding="utf-8").splitlines()
    with pytest.raises(CorpusFileError, match="header announces 1 documents, the file has 0"):
        load_corpus(write_lines(tmp_path / "cut.jsonl", lines[:1]))
    with pytest.raises(CorpusFileError, match="use import_jsonl"):
        load_corpus(tmp_path / "in.jsonl")
    broken = [lines[0], lines[1].replace('"text":', '"txt":', 1)]
    with pytest.raises(CorpusFileError, match=r"broken.jsonl line 2: field passages\[0\]"):
        load_corpus(write_lines(tmp_path / "broken.jsonl", broken))


# --------------------------------------------------------------------------------------------
# pydocs: the Sphinx rules on a small page of our own, then the real package

SPHINX_PAGE = """<html><body>
<div class="related" role="navigation"><ul>
<li class="nav-item nav-item-1"><a href="index.html">Library</a> &#187;</li>
<li class="nav-item nav-item-2"><a href="weather.html">Weather services</a> &#187;</li>
<li class="nav-item nav-item-this"><a href="">barometer</a></li></ul></div>
<div class="body" role="main"><section id="module-barometer">
<h1><code class="xref py py-mod"><span class="pre">barometer</span></code> — Air pressure
<a class="headerlink" href="#module-barometer">¶</a></h1>
<p><strong>Source code:</strong> <a href="https://example.invalid/barometer.py">barometer.py</a></p>
<p>This module reads air pressure from a <a class="reference internal" href="gauge.html">gauge</a>
and turns it into a short forecast for sailors.</p>
<div class="highlight-python3 notranslate">
<div class="highlight"><pre>barometer.read()</pre></div></div>
<section id="readings"><h2><span class="section-number">1. </span>Readings
<a class="headerlink" href="#readings">¶</a></h2>
<dl class="py function">
<dt class="sig sig-object py" id="barometer.read"><span class="sig-prename descclassname"><span
class="pre">barometer.</span></span><span class="sig-name descname"><span class="pre">read</span
></span><span class="sig-paren">(</span><em class="sig-param">unit</em><span class="sig-paren"
>)</span><a class="headerlink" href="#barometer.read">¶</a></dt>
<dd><p>Return the current pressure in the given unit, averaged over one minute.</p>
<p class="availability">Availability: Unix, not on small boats.</p>
<p class="audit-hook">Raises an auditing event barometer.read with argument unit.</p>
<div class="versionadded">
<p><span class="versionmodified added">New in version 3.9.</span></p></div>
<dl class="py class"><dt class="sig sig-object py"><span class="pre">class</span>
<span class="sig-name descname"><span class="pre">Reading</span></span></dt>
<dd><p>A single reading with its time and value, kept for the history.</p></dd></dl>
</dd></dl>
<dl class="py data"><dt class="sig sig-object py"><span class="pre">barometer.UNITS</span></dt>
<dd><div class="versionchanged"><p><span class="versionmodified changed">Changed in version
3.10: </span>Now a tuple.</p></div></dd></dl>
<div class="admonition seealso"><p class="admonition-title">See also</p>
<p>The hygrometer module documents the humidity sensor next to it.</p></div>
<table class="docutils"><tr><td>hPa and inHg are the units of pressure we know</td></tr></table>
<div class="toctree-wrapper compound"><ul><li class="toctree-l1">
<a class="reference internal" href="gauge.html">Gauge pages listed in a contents tree</a>
</li></ul></div>
</section></section></div></body></html>"""


def test_sphinx_page_rules(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "barometer.html").write_text(SPHINX_PAGE, encoding="utf-8")
    page = parse_page(tmp_path, "library/barometer")
    doc = page.document
    assert doc.title == "barometer — Air pressure"
    assert doc.topic == "library/weather"
    assert doc.abstract == (
        "This module reads air pressure from a gauge and turns it into a short forecast for "
        "sailors."
    )
    # API entries are units (signature + description); the nested class stays its own unit,
    # merged with its short neighbour; a signature alone (UNITS) is dropped; notes are dropped.
    assert [(p.section, p.text) for p in doc.passages] == [
        (
            ("Readings",),
            "barometer.read(unit)\nReturn the current pressure in the given unit, averaged over "
            "one minute.\n\nclass Reading\nA single reading with its time and value, kept for "
            "the history.",
        )
    ]
    assert page.links == frozenset({"library/gauge"})


def test_topic_clusters() -> None:
    assert topic_of("library/asyncio-task", {1: "library/index", 2: "library/ipc"}) == "library/ipc"
    assert topic_of("library/functions", {1: "library/index"}) == "library/functions"
    assert topic_of("howto/sorting", {1: "howto/index"}) == "howto"
    assert topic_of("glossary", {}) == "top"


def test_missing_package_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(
        UserError, match=re.escape(f"apt-get install python3.11-doc={PINNED_VERSION}")
    ):
        check_installed(tmp_path)
    with pytest.raises(UserError, match=r"python3\.11-doc is not installed"):
        build_pydocs_corpus(tmp_path / "absent", manifest=MANIFEST)


def test_manifest_pins_the_demo_selection() -> None:
    manifest = load_manifest(MANIFEST)
    assert manifest.package == "python3.11-doc" and manifest.package_version == PINNED_VERSION
    assert manifest.filters == CorpusFilter() and manifest.selection == PydocsSelection()
    per_topic: dict[str, int] = {}
    for entry in manifest.documents:
        per_topic[entry.topic] = per_topic.get(entry.topic, 0) + 1
        assert entry.passages == len(entry.passage_sha256) >= 12
    assert len(manifest.documents) <= 64 and max(per_topic.values()) <= 8
    assert manifest.stats.documents == len(manifest.documents)
    # hashes and counts only, never text of the pages
    raw = json.loads(MANIFEST.read_text(encoding="utf-8"))
    keys = {
        "id",
        "topic",
        "passages",
        "title_sha256",
        "abstract_sha256",
        "passage_sha256",
        "sha256",
    }
    hexes = set("0123456789abcdef")
    for doc in raw["documents"]:
        assert set(doc) == keys
        hashes = [
            doc["title_sha256"],
            doc["abstract_sha256"],
            doc["sha256"],
            *doc["passage_sha256"],
        ]
        assert all(len(h) == 64 and set(h) <= hexes for h in hashes)


needs_pydocs = pytest.mark.skipif(
    not (DEFAULT_DOC_ROOT / "library" / "index.html").is_file(),
    reason="python3.11-doc is not installed",
)


@pytest.fixture(scope="module")
def pydocs() -> Corpus:
    return build_pydocs_corpus(DEFAULT_DOC_ROOT, manifest=MANIFEST)


@needs_pydocs
def test_pydocs_build_verifies_against_manifest(pydocs: Corpus) -> None:
    manifest = load_manifest(MANIFEST)
    assert [d.id for d in pydocs.documents] == [e.id for e in manifest.documents]
    assert pydocs.source.package == "python3.11-doc"
    filters = CorpusFilter()
    assert all(filters.passes(d) for d in pydocs.documents)
    assert not any(d.id.startswith(("whatsnew/", "distutils/")) for d in pydocs.documents)
    text = "\n".join(p.text for d in pydocs.documents for p in d.passages)
    for note in ("New in version", "Changed in version", "Raises an auditing event"):
        assert note not in text
    assert corpus_stats(pydocs) == manifest.stats


@needs_pydocs
def test_pydocs_tampered_manifest_names_the_document(pydocs: Corpus, tmp_path: Path) -> None:
    manifest = load_manifest(MANIFEST)
    entry = manifest.documents[3]
    hashes = list(entry.passage_sha256)
    hashes[1] = "0" * 64
    tampered = manifest.model_copy(
        update={
            "documents": [
                e.model_copy(update={"passage_sha256": hashes}) if e is entry else e
                for e in manifest.documents
            ]
        }
    )
    with pytest.raises(UserError) as info:
        verify_corpus(pydocs, tampered, installed_version())
    message = str(info.value)
    assert f"document {entry.id!r}" in message and "passage p2" in message
    assert f"pinned package version python3.11-doc={PINNED_VERSION}" in message
    # the same with the manifest file edited on disk
    path = tmp_path / "manifest.json"
    path.write_text(tampered.model_dump_json(), encoding="utf-8")
    with pytest.raises(UserError, match=rf"document {entry.id!r} does not match"):
        verify_corpus(pydocs, load_manifest(path), installed_version())
    with pytest.raises(UserError, match="the package version differs"):
        verify_corpus(pydocs, manifest, "3.11.0-1")
