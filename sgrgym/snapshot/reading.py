"""Pages as agents read them: a page's text with its links and its forms (page text v2).

A fetch tool of a real agent hands the model more than the words of a page: Markdown-style
readers keep every link with its address, and a person sees a form's fields and their
choices. :func:`read_page` does the same for an archived HTML page:

- every link is written inline as ``[label](address)``, the address made absolute against
  the page's own address (lxml), so it can be fetched as it stands;
- every form becomes a block that names its method and address, then one line per field:
  its label, its parameter name in brackets and, for a drop-down list, its choices as
  ``label`` (or ``label = value`` when they differ; the selected one marked ``(selected)``,
  an empty value written ``""``); hidden fields are listed as ``kept`` settings, and the
  submit button by its text (what submitting by GET sends is those fields as the query);
- the rest is laid out by inscriptis (tables as aligned columns, lists as bullets).

The format is versioned (:data:`PAGE_TEXT_VERSION`; the tools file that describes it names the
version and its sha256 goes into run cards). :func:`main_text` is the text of a page's
``main`` content without links (what a search engine's snippet is cut from);
:func:`page_targets` lists where a page's links and forms lead (one parse for both). PDF and
plain text bodies read as :func:`~sgrgym.snapshot.text.body_to_text` reads them.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlencode, urljoin

from sgrgym.snapshot.text import body_to_text, decode_body, is_html

PAGE_TEXT_VERSION = 2
READ_CACHE_PAGES = 256  # pages whose text read_page keeps (~70 KB each with its body)


def _html_tree(body: bytes, content_type: str):  # type: ignore[no-untyped-def]
    """The lxml tree of an HTML body (None for an empty or unparsable document)."""
    import lxml.html
    from lxml.etree import ParserError

    try:
        return lxml.html.document_fromstring(decode_body(body, content_type))
    except (ParserError, ValueError):
        return None


def _label_of(field) -> str:  # type: ignore[no-untyped-def]
    """The text of the ``label`` a field sits in (its own text left out), or ""."""
    parent = field.getparent()
    while parent is not None and parent.tag != "label":
        parent = parent.getparent()
    if parent is None:
        return ""
    text = (parent.text or "").strip()
    return text.rstrip(":").strip()


def _value(text: str) -> str:
    return text if text else '""'


def form_lines(form, base_url: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The lines a form is read as (see the module docstring)."""
    method = (form.get("method") or "get").upper()
    action = urljoin(base_url, form.get("action") or base_url)
    lines = [f"Form ({method} {action}):"]
    kept = []
    for field in form.iter("select", "input", "textarea", "button"):
        name = field.get("name") or ""
        label = _label_of(field)
        kind = (field.get("type") or "").lower()
        if field.tag == "select":
            choices = []
            for option in field.iter("option"):
                text = " ".join((option.text_content() or "").split())
                value = option.get("value", text)
                shown = text if value == text else f"{text} = {_value(value)}"
                if option.get("selected") is not None:
                    shown += " (selected)"
                choices.append(shown)
            lines.append(f"- {label or name} [{name}]: " + " | ".join(choices))
        elif field.tag == "button" or kind in ("submit", "button", "reset"):
            text = " ".join((field.text_content() or field.get("value") or "").split())
            lines.append(f"- button: {text or 'Submit'}")
        elif kind == "hidden":
            kept.append(f"{name}={field.get('value', '')}")
        else:
            value = field.get("value", "")
            lines.append(
                f"- {label or name} [{name}]: {kind or 'text'} field"
                + (f", now {_value(value)}" if value else "")
            )
    if kept:
        lines.insert(1, "- kept: " + "&".join(kept))
    return lines


@lru_cache(maxsize=READ_CACHE_PAGES)
def read_page(body: bytes, content_type: str, url: str) -> str:
    """The text of a page as an agent's fetch tool gives it (page text v2).

    A pure function of its arguments, so the last :data:`READ_CACHE_PAGES` pages read in a
    process are kept: a page fetched again (a site's start page, a table page an agent
    returns to, the same page in the next task) is not laid out again."""
    if not is_html(content_type):
        return body_to_text(body, content_type)
    from inscriptis import Inscriptis
    from inscriptis.model.config import ParserConfig
    from lxml import etree

    tree = _html_tree(body, content_type)
    if tree is None:
        return ""
    tree.make_links_absolute(url, resolve_base_href=True, handle_failures="ignore")
    for form in list(tree.iter("form")):
        block = etree.Element("pre")
        block.text = "\n".join(form_lines(form, url))
        block.tail = form.tail
        form.getparent().replace(form, block)
    text: str = Inscriptis(tree, ParserConfig(display_links=True)).get_text()
    return text.strip()


def main_text(body: bytes, content_type: str) -> str:
    """The text of a page's ``main`` content (the whole page when it has none), no links."""
    if not is_html(content_type):
        return body_to_text(body, content_type)
    from inscriptis import Inscriptis

    tree = _html_tree(body, content_type)
    if tree is None:
        return ""
    main = next(tree.iter("main"), None)
    if main is not None:
        for form in list(main.iter("form")):
            form.drop_tree()
        root = main
    else:
        root = tree
    text: str = Inscriptis(root).get_text()
    return text.strip()


def page_targets(body: bytes, content_type: str, url: str) -> list[str]:
    """Where a page leads, in page order and once each: the target of every link (made
    absolute against ``url``), then every address its GET forms lead to (for each drop-down
    list, each of its choices with every other field as the form holds it: what a person
    choosing one value and pressing the button would load)."""
    tree = _html_tree(body, content_type) if is_html(content_type) else None
    if tree is None:
        return []
    found = [urljoin(url, a.get("href")) for a in tree.iter("a") if a.get("href")]
    for form in tree.iter("form"):
        if (form.get("method") or "get").lower() != "get":
            continue
        action = urljoin(url, form.get("action") or url)
        values = list(form.form_values())
        for select in form.iter("select"):
            name = select.get("name") or ""
            others = [(k, v) for k, v in values if k != name]
            for option in select.iter("option"):
                value = option.get("value", " ".join(option.text_content().split()))
                query = urlencode([*others, (name, value)])
                found.append(f"{action}?{query}" if query else action)
    return list(dict.fromkeys(found))
