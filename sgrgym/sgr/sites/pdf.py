"""A minimal, deterministic PDF writer for the replica sites' report states.

Reports are monospaced text (Courier, one of the PDF standard fonts, so nothing is embedded):
a title and lines, 60 lines a page. The file has no creation date or document id, so the same
lines give the same bytes. The text is Latin-1; other characters become ``?``. Agents read such
a report with the ``pdf`` tool (pypdf extracts the lines again).
"""

from __future__ import annotations

from collections.abc import Sequence

LINES_PER_PAGE = 60
FONT_SIZE = 8
LEADING = 11
TOP = 800
LEFT = 36


def _escape(text: str) -> str:
    """A PDF literal string's body: backslash, parentheses escaped; Latin-1 only."""
    latin = text.encode("latin-1", "replace").decode("latin-1")
    return latin.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _stream(lines: Sequence[str]) -> bytes:
    """The content stream drawing ``lines`` top-down on one page."""
    ops = [f"BT /F1 {FONT_SIZE} Tf {LEADING} TL {LEFT} {TOP} Td"]
    ops += [f"({_escape(line)}) Tj T*" for line in lines]
    ops.append("ET")
    return "\n".join(ops).encode("latin-1")


def text_pdf(title: str, lines: Sequence[str]) -> bytes:
    """A PDF whose pages show ``title`` then ``lines`` (deterministic bytes)."""
    body = [title, "", *lines]
    chunks = [body[i : i + LINES_PER_PAGE] for i in range(0, len(body), LINES_PER_PAGE)] or [[]]
    # objects: 1 catalog, 2 pages, 3 font, then (page, contents) per page
    objects: list[bytes] = []
    kids = [4 + 2 * i for i in range(len(chunks))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    refs = " ".join(f"{k} 0 R" for k in kids)
    objects.append(f"<< /Type /Pages /Kids [{refs}] /Count {len(kids)} >>".encode())
    objects.append(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier /Encoding /WinAnsiEncoding >>"
    )
    for i, chunk in enumerate(chunks):
        stream = _stream(chunk)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {kids[i] + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    return pdf_file(objects)


def pdf_file(objects: Sequence[bytes]) -> bytes:
    """A PDF 1.4 file of ``objects`` (numbered from 1, the first the catalog) with its xref
    table and trailer."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)
