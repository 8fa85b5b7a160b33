"""Pages as agents read them (page text v2): links with their addresses, forms with their
fields, search text from the main content, and sites that ignore what they do not read."""

from __future__ import annotations

import json

from toy_site import MODEL

from sgrgym.sgr.cli_agents.tools import tools_text
from sgrgym.sgr.sites.model import State
from sgrgym.sgr.sites.page import Choice, ControlLinks, render_page
from sgrgym.snapshot.reading import PAGE_TEXT_VERSION, main_text, page_targets, read_page
from sgrgym.snapshot.text import search_text

PAGE = b"""<!doctype html><html><head><title>T</title></head><body>
<header><nav><a href="/">Home</a> | <a href="about">About</a></nav></header>
<main><h1>Plants</h1><p>See <a href="/plants?kind=tree">trees</a>.</p>
<form method="get" action="/plants"><label>Kind: <select name="kind">
<option value="">all</option><option value="tree" selected>Trees</option><option>shrub</option>
</select></label><input type="hidden" name="zone" value="north">
<label>From: <input type="text" name="from"></label><button type="submit">Show</button></form>
</main><footer><a href="/about">About</a></footer></body></html>"""
URL = "http://toy.sgrgym.test/plants?kind=tree"


def test_links_are_written_with_absolute_addresses() -> None:
    text = read_page(PAGE, "text/html; charset=utf-8", URL)
    assert "[Home](http://toy.sgrgym.test/)" in text
    assert "[About](http://toy.sgrgym.test/about)" in text  # relative: made absolute
    assert "See [trees](http://toy.sgrgym.test/plants?kind=tree)." in text


def test_forms_name_their_fields_and_choices() -> None:
    text = read_page(PAGE, "text/html", URL)
    block = text[text.index("Form (") :].splitlines()[:5]
    assert block == [
        "Form (GET http://toy.sgrgym.test/plants):",
        "- kept: zone=north",
        '- Kind [kind]: all = "" | Trees = tree (selected) | shrub',
        "- From [from]: text field",
        "- button: Show",
    ]
    assert page_targets(PAGE, "text/html", URL) == [
        "http://toy.sgrgym.test/",  # the links first, made absolute, once each
        "http://toy.sgrgym.test/about",
        "http://toy.sgrgym.test/plants?kind=tree",
        "http://toy.sgrgym.test/plants?zone=north&kind=",
        "http://toy.sgrgym.test/plants?zone=north&kind=tree",
        "http://toy.sgrgym.test/plants?zone=north&kind=shrub",
    ]


def test_search_text_is_the_main_content_only() -> None:
    text = main_text(PAGE, "text/html")
    assert text.startswith("Plants") and "Home" not in text and "About" not in text
    assert "shrub" not in text  # a form's choices are not what a page is about
    assert read_page(b"plain words", "text/plain", URL) == "plain words"
    assert read_page(b"", "text/html", URL) == ""


def test_the_tools_file_describes_this_page_text_version() -> None:
    described = json.loads(tools_text())["page_text"]
    assert described.startswith(f"page text v{PAGE_TEXT_VERSION}:")


def kind(n: int) -> State:
    """A toy state with a made-up kind (0: none), to test the template alone."""
    return State(path="/plants", params=(("kind", f"k{n}"),) if n else ())


def test_site_pages_have_furniture_and_long_groups_become_forms() -> None:
    state = MODEL.state("/plants")
    many = ControlLinks("Kind", [Choice(f"k{n}", kind(n)) for n in range(8)])
    body = render_page(MODEL, state, "Plants", "All plants.", controls=[many])
    html = body.decode()
    assert "<header>" in html and "<main>" in html and "<footer>" in html
    assert '<select name="kind">' in html and "Kind:" in html
    text = read_page(body, "text/html", MODEL.url(state))
    assert '- Kind [kind]: k0 = "" (selected) | k1 | k2' in text
    few = ControlLinks("Kind", [Choice(f"k{n}", kind(n)) for n in range(3)])
    assert "<select" not in render_page(MODEL, state, "P", "p", controls=[few]).decode()


def test_search_text_keeps_the_words_one_line_per_block() -> None:
    text = search_text(PAGE, "text/html; charset=utf-8")
    lines = text.splitlines()
    # A drop-down list's choices and a table's cells never run into each other.
    assert lines[lines.index("all") : lines.index("all") + 3] == ["all", "Trees", "shrub"]
    assert "T" not in lines  # the head (title) is not page text: the index keeps it apart
    row = b"<table><tr><td>S&atilde;o Paulo</td><td>12</td></tr></table>"
    assert search_text(b"<html><body>" + row + b"</body></html>", "text/html") == "S\xe3o Paulo\n12"
    junk = b"<body><script>var x = 1;</script><style>p{}</style>one <b>two</b><!-- c --></body>"
    assert search_text(junk, "text/html") == "one two"
    assert search_text(b"", "text/html") == "" and search_text(b"  ", "text/html") == ""
    declared = b'<?xml version="1.0" encoding="utf-8"?><html><body><p>caf\xc3\xa9</p></body></html>'
    assert search_text(declared, "application/xhtml+xml") == "caf\xe9"
    assert search_text(b"plain words", "text/plain") == "plain words"
