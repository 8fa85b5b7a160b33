"""The replica sites' PDF writer: text that pypdf reads back, several pages, fixed bytes."""

from __future__ import annotations

import io

from pypdf import PdfReader

from sgrgym.sgr.sites.pdf import LINES_PER_PAGE, text_pdf
from sgrgym.snapshot.text import pdf_to_text


def test_lines_come_back_with_special_characters() -> None:
    body = text_pdf("Report (draft)", ["a (b) c", "back\\slash", "Zürich 10°"])
    text = pdf_to_text(body)
    assert text.splitlines() == ["Report (draft)", "a (b) c", "back\\slash", "Zürich 10°"]
    assert text_pdf("Report (draft)", ["a (b) c", "back\\slash", "Zürich 10°"]) == body


def test_long_reports_span_pages() -> None:
    lines = [f"line {n}" for n in range(2 * LINES_PER_PAGE)]
    body = text_pdf("Long", lines)
    assert len(PdfReader(io.BytesIO(body)).pages) == 3  # title + blank + 120 lines
    text = pdf_to_text(body)
    assert "line 0" in text and f"line {2 * LINES_PER_PAGE - 1}" in text
    assert text_pdf("Empty", []).startswith(b"%PDF-1.4")
