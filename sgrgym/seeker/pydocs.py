"""The demo corpus: the Python 3.11 documentation from the Debian package ``python3.11-doc``.

Built on the user's machine from the installed HTML pages (their text is never committed) and
verified against ``tasks/seeker/pydocs/manifest.json``, which pins the package version and, per
document, sha256 hashes of the title, the abstract and every passage.

Extraction (Sphinx HTML): the content is ``div.body``; code blocks, tables, tables of contents,
footnotes, "See also" boxes, version/availability/audit notes ("New in version ...", "Changed in
version ...", "Availability: ...", "Raises an auditing event ...") and "Source code:" lines are
dropped. An API entry (signature ``<dt>`` + description ``<dd>``) is one unit; a signature
without description is dropped. The text before the first ``<h2>`` is the abstract. Consecutive
paragraphs of a section are merged until a passage has at least 48 tokens (one ``<p>`` per
passage lets no page pass the paper's filters). ``whatsnew/`` and ``distutils/`` are skipped.

Topic clusters follow the docs' own grouping (the pages' "up" breadcrumbs): a library page
belongs to its chapter of the library index (``library/text``, ``library/ipc``, ...), any other
page to its manual (``howto``, ``tutorial``, ``reference``, ``c-api``, ...). The chapter of
superseded modules (``library/superseded``) is left out like ``distutils/``.

Selection (deterministic): pages that pass the filters are scored like the paper's final corpus
construction, ``log(inbound + 1) * (1 - short passage ratio)`` with ``inbound`` the number of
other parsed pages linking to the page; clusters are taken in order of their number of passing
pages (then id), each with its best-scored pages (ties by id), at most ``max_per_topic`` per
cluster and ``max_documents`` in all.
"""

from __future__ import annotations

import math
import posixpath
import re
import statistics
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import canonical_json, sha256_bytes, sha256_json
from sgrgym.core.home import home_path
from sgrgym.core.inputs import field_problem
from sgrgym.core.output import write_json
from sgrgym.seeker.corpus import (
    GENERIC,
    Corpus,
    CorpusFilter,
    CorpusSource,
    CorpusStats,
    Document,
    Element,
    ExtractOptions,
    LinkCounts,
    Profile,
    corpus_sha256,
    corpus_stats,
    document_record,
    element_text,
    extract_page,
    make_document,
    parse_html,
)

Regroup = Callable[[dict[str, list[Document]]], dict[str, list[Document]]]
"""Re-assigns passing documents to topic clusters (e.g. embedding clusters), by topic."""

PACKAGE = "python3.11-doc"
PINNED_VERSION = "3.11.2-6+deb12u9"
DEFAULT_DOC_ROOT = Path("/usr/share/doc/python3.11/html")
DEFAULT_MANIFEST = home_path("tasks/seeker/pydocs/manifest.json")
CORPUS_NAME = "pydocs"
MANIFEST_FORMAT = 1

SKIP_DIRS = frozenset({"whatsnew", "distutils", "_static", "_sources", "_images", "_downloads"})
SKIP_PAGES = frozenset({"search", "py-modindex", "genindex", "contents"})
# Clusters left out of the selection: modules kept only for compatibility (like distutils/).
SKIP_TOPICS = frozenset({"library/superseded"})

_DROP_NOTES = re.compile(
    r"^(New in version|Changed in version|Deprecated since version|Availability:|"
    r"Raises an auditing event|Source code:|"
    r"(Authors?|Release|Date|Version|Contact|Email|Audience|Copyright|Last updated):)",
)


def _sphinx_root(tree: Element) -> Element:
    body = tree.find(lambda e: e.tag == "div" and "body" in e.classes)
    return body if body is not None else GENERIC.root(tree)


def _is_api_entry(dl: Element) -> bool:
    """A Sphinx object description: its first ``<dt>`` is a signature (class ``sig``)."""
    first = next((c for c in dl.elements() if c.tag == "dt"), None)
    return first is not None and "sig" in first.classes


SPHINX = Profile(
    name="pydocs",
    drop_classes=GENERIC.drop_classes
    | frozenset(
        {
            "headerlink",
            "section-number",
            "toctree-wrapper",
            "contents",
            "doctest",
            "versionadded",
            "versionchanged",
            "deprecated",
            "deprecated-removed",
            "availability",
            "audit-hook",
            "admonition-title",
            "seealso",
            "rubric",
            "footnote",
            "footnote-list",
            "productionlist",
            "related",
        }
    ),
    drop_class_prefixes=("highlight",),
    drop_text=_DROP_NOTES,
    root=_sphinx_root,
    api_entry=_is_api_entry,
)

PYDOCS_EXTRACT = ExtractOptions(merge_min_tokens=48)


class PydocsSelection(BaseModel):
    """How many passing pages make the demo subset (see the module docstring for the rule)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_per_topic: int = Field(default=8, ge=1)
    max_documents: int = Field(default=64, ge=1)


# --------------------------------------------------------------------------------------------
# Pages


@dataclass(frozen=True)
class DocPage:
    """One parsed documentation page: its document, and the page ids it links to."""

    document: Document
    links: frozenset[str]


def page_ids(doc_root: Path) -> list[str]:
    """Ids (relative paths without ``.html``) of the pages to parse, sorted."""
    ids: list[str] = []
    for path in doc_root.rglob("*.html"):
        rel = path.relative_to(doc_root).as_posix()
        parts = rel.split("/")
        stem = rel[: -len(".html")]
        if parts[0] in SKIP_DIRS or any(stem.split("/")[-1].startswith(s) for s in SKIP_PAGES):
            continue
        ids.append(stem)
    return sorted(ids)


def _resolve(page_id: str, href: str) -> str | None:
    """The page id an internal ``href`` of page ``page_id`` points to (None if external)."""
    target = href.split("#", 1)[0]
    if not target or ":" in target or not target.endswith(".html"):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(page_id), target))
    return None if joined.startswith("..") else joined[: -len(".html")]


def _breadcrumbs(tree: Element, page_id: str) -> dict[int, str]:
    """Breadcrumb depth -> page id, from the first ``div.related`` bar."""
    bar = tree.find(lambda e: e.tag == "div" and "related" in e.classes)
    crumbs: dict[int, str] = {}
    if bar is None:
        return crumbs
    for li in bar.iter():
        depth = next((c[len("nav-item-") :] for c in li.classes if c.startswith("nav-item-")), "")
        if li.tag != "li" or not depth.isdigit():
            continue
        link = li.find(lambda e: e.tag == "a" and "href" in e.attrs)
        target = _resolve(page_id, link.attrs["href"]) if link is not None else None
        if target is not None:
            crumbs[int(depth)] = target
    return crumbs


def topic_of(page_id: str, crumbs: dict[int, str]) -> str:
    """The topic cluster: a library page's chapter, else the page's manual (top directory)."""
    top, _, rest = page_id.partition("/")
    if not rest:
        return "top"
    if top == "library":
        return crumbs.get(2, page_id)
    return top


def parse_page(doc_root: Path, page_id: str) -> DocPage:
    """Parse one page into a :class:`DocPage` (its document is not filtered)."""
    html = (doc_root / f"{page_id}.html").read_text(encoding="utf-8")
    tree = parse_html(html)
    root = SPHINX.root(tree)
    h1 = root.find(lambda e: e.tag == "h1")
    title = element_text(h1, SPHINX) if h1 is not None else ""
    page = extract_page(tree, SPHINX, PYDOCS_EXTRACT, title)
    topic = topic_of(page_id, _breadcrumbs(tree, page_id))
    document = make_document(page_id, title, "\n\n".join(page.abstract), topic, page.passages)
    links = {
        target
        for a in root.iter()
        if a.tag == "a" and "href" in a.attrs
        for target in [_resolve(page_id, a.attrs["href"])]
        if target is not None and target != page_id
    }
    return DocPage(document, frozenset(links))


def parse_pages(
    doc_root: Path, progress: Callable[[int, int, str], None] | None = None
) -> list[DocPage]:
    """Every page of :func:`page_ids`, parsed, in id order."""
    ids = page_ids(doc_root)
    pages: list[DocPage] = []
    for i, page_id in enumerate(ids, start=1):
        pages.append(parse_page(doc_root, page_id))
        if progress is not None:
            progress(i, len(ids), page_id)
    return pages


# --------------------------------------------------------------------------------------------
# Selection


def inbound_links(pages: Iterable[DocPage]) -> Counter[str]:
    """For each page id, how many other parsed pages link to it."""
    counts: Counter[str] = Counter()
    for page in pages:
        counts.update(page.links)
    return counts


def link_counts(pages: Sequence[DocPage]) -> dict[str, LinkCounts]:
    """In-corpus links per page: other parsed pages linking to it, parsed pages it links to."""
    inbound = inbound_links(pages)
    parsed = {p.document.id for p in pages}
    return {p.document.id: LinkCounts(inbound[p.document.id], len(p.links & parsed)) for p in pages}


def page_score(doc: Document, inbound: int, short_tokens: int) -> float:
    """The paper's final-construction score: ``log(citations + 1) * (1 - short ratio)``."""
    return math.log(inbound + 1) * (1.0 - doc.short_ratio(short_tokens))


def select_documents(
    pages: Sequence[DocPage],
    filters: CorpusFilter,
    selection: PydocsSelection,
    topics: Regroup | None = None,
) -> list[Document]:
    """The demo subset (module docstring), ordered by topic then id."""
    inbound = inbound_links(pages)
    links = link_counts(pages)
    by_topic: dict[str, list[Document]] = defaultdict(list)
    for page in pages:
        doc = page.document
        if doc.topic not in SKIP_TOPICS and filters.passes(doc, links[doc.id]):
            by_topic[doc.topic].append(doc)
    if topics is not None:
        by_topic = topics(by_topic)
    chosen: list[Document] = []
    for topic in sorted(by_topic, key=lambda t: (-len(by_topic[t]), t)):
        ranked = sorted(
            by_topic[topic],
            key=lambda d: (-page_score(d, inbound[d.id], filters.short_tokens), d.id),
        )
        room = selection.max_documents - len(chosen)
        chosen.extend(ranked[: min(selection.max_per_topic, room)])
        if len(chosen) >= selection.max_documents:
            break
    return sorted(chosen, key=lambda d: (d.topic, d.id))


# --------------------------------------------------------------------------------------------
# Manifest


class ManifestDocument(BaseModel):
    """Hashes (never text) of one document of the demo corpus."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    topic: str
    passages: int
    title_sha256: str
    abstract_sha256: str
    passage_sha256: list[str]
    sha256: str  # of the document's JSON record (ids, sections and texts)


class PydocsManifest(BaseModel):
    """``tasks/seeker/pydocs/manifest.json``: what a correct build of the demo corpus gives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: int = MANIFEST_FORMAT
    corpus: str = CORPUS_NAME
    package: str = PACKAGE
    package_version: str
    filters: CorpusFilter
    extract: ExtractOptions
    selection: PydocsSelection
    corpus_sha256: str
    stats: CorpusStats
    documents: list[ManifestDocument]


def _sha(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def manifest_document(doc: Document) -> ManifestDocument:
    """The manifest entry of ``doc``."""
    return ManifestDocument(
        id=doc.id,
        topic=doc.topic,
        passages=doc.n_passages,
        title_sha256=_sha(doc.title),
        abstract_sha256=_sha(doc.abstract),
        passage_sha256=[_sha(p.text) for p in doc.passages],
        sha256=sha256_json(document_record(doc)),
    )


def make_manifest(
    corpus: Corpus, version: str, filters: CorpusFilter, selection: PydocsSelection
) -> PydocsManifest:
    """The manifest that pins ``corpus`` built from package ``version``."""
    return PydocsManifest(
        package_version=version,
        filters=filters,
        extract=PYDOCS_EXTRACT,
        selection=selection,
        corpus_sha256=corpus_sha256(corpus),
        stats=corpus_stats(corpus),
        documents=[manifest_document(d) for d in corpus.documents],
    )


def load_manifest(path: Path) -> PydocsManifest:
    """Read and validate the manifest; a UserError names the file when it is missing or bad."""
    try:
        return PydocsManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"pydocs manifest not found: {path}") from None
    except ValidationError as err:
        raise UserError(f"{path}: invalid pydocs manifest: {field_problem(err)}") from None


def write_manifest(
    path: Path = DEFAULT_MANIFEST,
    doc_root: Path = DEFAULT_DOC_ROOT,
    filters: CorpusFilter | None = None,
    selection: PydocsSelection | None = None,
) -> PydocsManifest:
    """(Re)build the demo corpus without verification and write its manifest to ``path``.

    The installed package must be the pinned version (so a manifest is never written for
    another one by mistake); change :data:`PINNED_VERSION` to re-pin.
    """
    version = installed_version()
    if version is not None and version != PINNED_VERSION:
        raise UserError(
            f"installed {PACKAGE} is {version}, the pinned version is {PINNED_VERSION}: "
            f"apt-get install {PACKAGE}={PINNED_VERSION} (or change PINNED_VERSION to re-pin)"
        )
    filters = filters or CorpusFilter()
    selection = selection or PydocsSelection()
    corpus = build_pydocs_corpus(doc_root, filters, selection=selection, manifest=None)
    manifest = make_manifest(corpus, PINNED_VERSION, filters, selection)
    write_json(canonical_json(manifest.model_dump(mode="json")).rstrip("\n"), path)
    return manifest


def installed_version() -> str | None:
    """The installed version of the package per ``dpkg-query``; None without dpkg or package."""
    try:
        done = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", PACKAGE],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    version = done.stdout.strip()
    return version if done.returncode == 0 and version else None


def _differs(
    doc_id: str, what: str, manifest: PydocsManifest, installed: str | None, fix: str | None
) -> UserError:
    if fix is not None:
        return UserError(
            f"{manifest.corpus} corpus: document {doc_id!r} does not match the manifest "
            f"({what}); {fix}"
        )
    have = installed or "unknown (no dpkg-query)"
    return UserError(
        f"pydocs corpus: document {doc_id!r} does not match the manifest ({what}). The "
        f"installed documentation differs from the pinned package version "
        f"{manifest.package}={manifest.package_version} (installed: {have}); install it with "
        f"apt-get install {manifest.package}={manifest.package_version}"
    )


def verify_corpus(
    corpus: Corpus, manifest: PydocsManifest, installed: str | None, *, fix: str | None = None
) -> None:
    """Check ``corpus`` against ``manifest``; a UserError names the first differing document.

    ``fix`` replaces the Debian install hint (for corpora from other sources)."""
    if installed is not None and installed != manifest.package_version:
        raise UserError(
            f"installed {manifest.package} is {installed}, the manifest pins "
            f"{manifest.package_version}: the package version differs; install it with "
            f"apt-get install {manifest.package}={manifest.package_version}"
        )
    built = {d.id: d for d in corpus.documents}
    for entry in manifest.documents:
        doc = built.get(entry.id)
        if doc is None:
            raise _differs(entry.id, "missing from the build", manifest, installed, fix)
        got = manifest_document(doc)
        if got.topic != entry.topic:
            raise _differs(
                entry.id, f"topic {got.topic!r} != {entry.topic!r}", manifest, installed, fix
            )
        if got.title_sha256 != entry.title_sha256:
            raise _differs(entry.id, "title hash", manifest, installed, fix)
        if got.abstract_sha256 != entry.abstract_sha256:
            raise _differs(entry.id, "abstract hash", manifest, installed, fix)
        if got.passages != entry.passages:
            what = f"{got.passages} passages, the manifest has {entry.passages}"
            raise _differs(entry.id, what, manifest, installed, fix)
        for i, (a, b) in enumerate(zip(got.passage_sha256, entry.passage_sha256, strict=True)):
            if a != b:
                raise _differs(entry.id, f"hash of passage p{i + 1}", manifest, installed, fix)
        if got.sha256 != entry.sha256:
            raise _differs(entry.id, "document hash (sections)", manifest, installed, fix)
    extra = sorted(set(built) - {e.id for e in manifest.documents})
    if extra:
        raise _differs(extra[0], "not in the manifest", manifest, installed, fix)
    if corpus_sha256(corpus) != manifest.corpus_sha256:
        raise UserError(
            f"{manifest.corpus} corpus: the corpus hash differs from the manifest's "
            f"({manifest.package}={manifest.package_version})"
        )


# --------------------------------------------------------------------------------------------
# Build


def check_installed(doc_root: Path) -> None:
    """A UserError with the install command when the documentation pages are missing."""
    if not (doc_root / "library" / "index.html").is_file():
        raise UserError(
            f"{PACKAGE} is not installed ({doc_root} has no library/index.html); install it "
            f"with: apt-get install {PACKAGE}={PINNED_VERSION}"
        )


def build_pydocs_corpus(
    doc_root: Path = DEFAULT_DOC_ROOT,
    filters: CorpusFilter | None = None,
    *,
    selection: PydocsSelection | None = None,
    manifest: Path | None = DEFAULT_MANIFEST,
    progress: Callable[[int, int, str], None] | None = None,
    topics: Regroup | None = None,
    name: str = CORPUS_NAME,
) -> Corpus:
    """Build the demo corpus from the installed pages and verify it against ``manifest``.

    ``manifest=None`` skips verification (for other filters or selections, or to re-pin);
    with a manifest, ``filters`` and ``selection`` must be the manifest's and the topic
    clusters the source's (``topics`` None). ``topics`` regroups the passing pages before the
    selection (embedding-based clusters, :mod:`sgrgym.seeker.topics`).
    """
    check_installed(doc_root)
    filters = filters or CorpusFilter()
    selection = selection or PydocsSelection()
    pinned: PydocsManifest | None = None
    if manifest is not None:
        if topics is not None or name != CORPUS_NAME:
            raise UserError(
                "a corpus with other topic clusters is not the pinned demo corpus: "
                "build it unverified (manifest=None) under another name"
            )
        pinned = load_manifest(manifest)
        if pinned.filters != filters or pinned.selection != selection:
            raise UserError(
                f"the filters/selection differ from those pinned in {manifest}; pass "
                "manifest=None to build an unverified corpus"
            )
        if pinned.extract != PYDOCS_EXTRACT:
            raise UserError(f"{manifest}: extraction options differ from this version's")
    installed = installed_version()
    pages = parse_pages(doc_root, progress)
    documents = select_documents(pages, filters, selection, topics)
    corpus = Corpus(
        name=name,
        source=CorpusSource(kind="pydocs", package=PACKAGE, version=installed or ""),
        documents=tuple(documents),
    )
    if pinned is not None:
        verify_corpus(corpus, pinned, installed)
    return corpus


@dataclass(frozen=True)
class BuildReport:
    """Counts of a pydocs build for reports: pages parsed, passing, per topic, seconds."""

    pages: int
    passing: int
    passing_by_topic: dict[str, int]
    seconds: float


def survey_pages(
    doc_root: Path = DEFAULT_DOC_ROOT, filters: CorpusFilter | None = None
) -> BuildReport:
    """Parse every page and count those passing ``filters`` (overall and per topic)."""
    check_installed(doc_root)
    filters = filters or CorpusFilter()
    start = time.perf_counter()
    pages = parse_pages(doc_root)
    passing = [p.document for p in pages if filters.passes(p.document)]
    by_topic = Counter(d.topic for d in passing)
    return BuildReport(
        pages=len(pages),
        passing=len(passing),
        passing_by_topic=dict(sorted(by_topic.items(), key=lambda kv: (-kv[1], kv[0]))),
        seconds=time.perf_counter() - start,
    )


# --------------------------------------------------------------------------------------------
# Filter counts (a Table-2-style account of the curation stages)


class FilterCount(BaseModel):
    """One filter over the parsed pages: how many fail it alone, how many pass it and every
    filter before it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    filter: str
    failing: int
    remaining: int


class StageStats(BaseModel):
    """Documents, and median [Q1-Q3] passages per document and tokens per passage."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: str
    documents: int
    passages_per_document: tuple[float, float, float]
    tokens_per_passage: tuple[float, float, float]


def _quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, Q1, Q3), linear interpolation between order statistics."""
    if len(values) < 2:
        only = float(values[0]) if values else 0.0
        return (only, only, only)
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (round(q2, 1), round(q1, 1), round(q3, 1))


def stage_stats(stage: str, documents: Sequence[Document]) -> StageStats:
    return StageStats(
        stage=stage,
        documents=len(documents),
        passages_per_document=_quartiles([d.n_passages for d in documents]),
        tokens_per_passage=_quartiles([p.tokens for d in documents for p in d.passages]),
    )


def filter_counts(
    pages: Sequence[DocPage], filters: CorpusFilter
) -> tuple[list[FilterCount], list[Document]]:
    """Per filter of ``filters`` (in :meth:`CorpusFilter.checks` order): pages failing it and
    pages passing it and all earlier ones; and the pages passing every filter."""
    links = link_counts(pages)
    kept = [p for p in pages if p.document.topic not in SKIP_TOPICS]
    failed = {
        p.document.id: {name for name, _ in filters.checks(p.document, links[p.document.id])}
        for p in kept
    }
    order = [
        "min passages",
        "max passages",
        "short ratio",
        "abstract tokens",
        "min sections",
        "caption ratio",
        "min inbound",
        "min outbound",
    ]
    active = {name for names in failed.values() for name in names} | {"min passages"}
    counts = []
    seen: set[str] = set()
    for name in order:
        if name not in active and not _configured(filters, name):
            continue
        seen.add(name)
        counts.append(
            FilterCount(
                filter=name,
                failing=sum(1 for f in failed.values() if name in f),
                remaining=sum(1 for f in failed.values() if not f & seen),
            )
        )
    passing = [p.document for p in kept if not failed[p.document.id]]
    return counts, passing


def _configured(filters: CorpusFilter, name: str) -> bool:
    field_of = {
        "max passages": filters.max_passages,
        "min sections": filters.min_sections,
        "caption ratio": filters.max_caption_ratio,
        "min inbound": filters.min_inbound,
        "min outbound": filters.min_outbound,
    }
    return name not in field_of or field_of[name] is not None


FILTER_SETS = {
    "encyclopedic": CorpusFilter(),  # B.1.1 (the pinned demo corpus)
    "encyclopedic-links": CorpusFilter(min_inbound=16, min_outbound=4),  # B.1.1 with links
    "ml-surveys": CorpusFilter.ml_surveys(),  # B.1.2
}


def filter_set(name: str) -> CorpusFilter:
    if name not in FILTER_SETS:
        raise UserError(f"no filter set {name!r}; sets: {', '.join(FILTER_SETS)}")
    return FILTER_SETS[name]


class FilterReport(BaseModel):
    """Per filter set: the counts of :func:`filter_counts` and the stage statistics."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    package_version: str | None
    parsed: StageStats
    sets: dict[str, list[FilterCount]]
    passing: dict[str, StageStats]


def filter_report(doc_root: Path = DEFAULT_DOC_ROOT) -> FilterReport:
    """Every filter set of :data:`FILTER_SETS` over the installed pages."""
    check_installed(doc_root)
    pages = parse_pages(doc_root)
    sets: dict[str, list[FilterCount]] = {}
    passing: dict[str, StageStats] = {}
    for name, filters in FILTER_SETS.items():
        counts, kept = filter_counts(pages, filters)
        sets[name] = counts
        passing[name] = stage_stats(name, kept)
    return FilterReport(
        package_version=installed_version(),
        parsed=stage_stats(
            "parsed", [p.document for p in pages if p.document.topic not in SKIP_TOPICS]
        ),
        sets=sets,
        passing=passing,
    )


def render_filter_report(report: FilterReport) -> str:
    from sgrgym.core.table import format_table

    def q(v: tuple[float, float, float]) -> str:
        return f"{v[0]:g} [{v[1]:g}–{v[2]:g}]"

    parts = []
    for name, counts in report.sets.items():
        rows = [[c.filter, str(c.failing), str(c.remaining)] for c in counts]
        parts.append(format_table([f"{name} filter", "Pages failing it", "Pages left"], rows))
    stages = [report.parsed, *report.passing.values()]
    rows = [
        [s.stage, str(s.documents), q(s.passages_per_document), q(s.tokens_per_passage)]
        for s in stages
    ]
    parts.append(format_table(["Stage", "Pages", "Passages / page", "Tokens / passage"], rows))
    return "\n\n".join(parts)
