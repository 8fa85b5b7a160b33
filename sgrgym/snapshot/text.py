"""Archived bodies as text for agents' fetch/pdf tools and for the search index.

HTML is rendered with inscriptis (keeps table layout and list structure, drops scripts and
styles); PDF text comes from pypdf, page by page. The archive's full-text index needs the
words of a page, not its layout: :func:`search_text` reads them with lxml alone, one line per
block (a cell, a list item, a choice of a drop-down list), several times faster than a layout.
"""

from __future__ import annotations

import io
import re
from html import unescape

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.I | re.S)
_CHARSET = re.compile(r"charset=([\w-]+)", re.I)
_SPACES = re.compile(r"[^\S\n]+")  # a run of white space within a line
_LINE_BREAK = re.compile(r"\s*\n\s*")  # line breaks with the white space around them
HTML_MIMES = ("text/html", "application/xhtml+xml")
TEXT_MIMES = (*HTML_MIMES, "application/pdf", "text/plain")


def charset_of(content_type: str, default: str = "utf-8") -> str:
    match = _CHARSET.search(content_type or "")
    return match.group(1) if match else default


def decode_body(body: bytes, content_type: str) -> str:
    try:
        return body.decode(charset_of(content_type), errors="replace")
    except LookupError:  # an unknown charset name
        return body.decode("utf-8", errors="replace")


def html_to_text(body: bytes, content_type: str = "text/html") -> str:
    from inscriptis import get_text

    text: str = get_text(decode_body(body, content_type))
    return text.strip()


# Elements that start a new line of :func:`search_text` (their words never run into a
# neighbour's, as inscriptis runs a drop-down list's choices together): a line break is put
# before each of their tags in the markup, so no element is visited from Python.
_BLOCK_TAG = re.compile(
    r"(?=</?(?:address|article|aside|blockquote|br|button|caption|dd|details|div|dl|dt|"
    r"fieldset|figcaption|figure|footer|form|h[1-6]|header|hr|label|li|main|nav|ol|option|p|"
    r"pre|section|select|summary|table|tbody|td|tfoot|th|thead|tr|ul)[\s/>])",
    re.I,
)


def html_words(body: bytes, content_type: str = "text/html") -> str:
    """The words of an HTML page, one line per block, without scripts, styles or head."""
    from lxml import etree

    markup = _BLOCK_TAG.sub("\n", decode_body(body, content_type))
    try:
        tree = etree.fromstring(markup.encode("utf-8"), etree.HTMLParser(encoding="utf-8"))
    except etree.XMLSyntaxError:  # no markup at all
        tree = None
    if tree is None:
        return ""
    etree.strip_elements(
        tree, "head", "script", "style", "noscript", "template", etree.Comment, with_tail=False
    )
    text = etree.tostring(tree, method="text", encoding="unicode", with_tail=False)
    return _LINE_BREAK.sub("\n", _SPACES.sub(" ", text)).strip()


def html_title(body: bytes) -> str:
    match = _TITLE.search(body)
    if not match:
        return ""
    return " ".join(unescape(match.group(1).decode("utf-8", errors="replace")).split())


def pdf_to_text(body: bytes) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a readable PDF ({exc})") from None
    return "\n\n".join(p.strip() for p in pages).strip()


def media_type(content_type: str) -> str:
    """The media type of a Content-Type value, lower-cased, without its parameters."""
    return (content_type or "").split(";")[0].strip().lower()


def is_html(content_type: str) -> bool:
    return media_type(content_type) in HTML_MIMES


def body_to_text(body: bytes, content_type: str) -> str:
    """Text of an archived body by its media type (HTML, PDF, plain text)."""
    mime = media_type(content_type)
    if is_html(content_type):
        return html_to_text(body, content_type)
    if mime == "application/pdf":
        return pdf_to_text(body)
    return decode_body(body, content_type)


def search_text(body: bytes, content_type: str) -> str:
    """Text of an archived body for the full-text index: an HTML page's words
    (:func:`html_words`), a PDF's or plain text as :func:`body_to_text` reads them."""
    if is_html(content_type):
        return html_words(body, content_type)
    return body_to_text(body, content_type)
