"""Archived bodies as text for agents' fetch/pdf tools and for the search index.

HTML is rendered with inscriptis (keeps table layout and list structure, drops scripts and
styles); PDF text comes from pypdf, page by page.
"""

from __future__ import annotations

import io
import re
from html import unescape

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.I | re.S)
_CHARSET = re.compile(r"charset=([\w-]+)", re.I)
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
