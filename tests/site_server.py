"""A small real HTTP site on 127.0.0.1 for recording tests: pages, a redirect, a POST search,
a JSON API, a PDF report and a cache-busting parameter. All content is written here."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from sgrgym.core.loopback import serve_http
from sgrgym.sgr.sites.pdf import pdf_file


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica (hand-assembled, valid xref table)."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R"
        b" >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    return pdf_file(objects)


SPECIES = {"boa": "Boa constrictor", "naja": "Naja naja", "vipera": "Vipera berus"}


def page(title: str, body: str) -> bytes:
    return (
        f"<!doctype html><html><head><title>{title}</title><style>p{{color:red}}</style>"
        f"<script>var x = 1;</script></head><body><h1>{title}</h1>{body}</body></html>"
    ).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def date_time_string(self, timestamp: float | None = None) -> str:
        return "Mon, 30 Nov 2026 00:00:00 GMT"  # fixed, so recordings are byte-identical

    def version_string(self) -> str:
        return "demo-site/1"

    def _send(
        self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if parts.path == "/":
            links = "".join(
                f'<li><a href="/species/{k}?_=1">{v}</a></li>' for k, v in SPECIES.items()
            )
            body = page(
                "Reptile index",
                f"<ul>{links}</ul><a href='/old'>old</a>"
                "<a href='/report.pdf'>report</a><a href='https://elsewhere.example/'>x</a>",
            )
            self._send(200, body, "text/html; charset=utf-8")
        elif parts.path.startswith("/species/"):
            key = parts.path.rsplit("/", 1)[1]
            if key not in SPECIES:
                self._send(404, b"no such species", "text/plain")
                return
            rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in sorted(query.items()))
            body = page(
                SPECIES[key],
                f"<p>Species {SPECIES[key]} lives in the demo region.</p>"
                f"<table><tr><th>param</th><th>value</th></tr>{rows}</table>",
            )
            self._send(200, body, "text/html; charset=utf-8")
        elif parts.path == "/old":
            self._send(301, b"", "text/plain", {"Location": "/species/boa"})
        elif parts.path == "/api/species":
            year = query.get("year", ["all"])[0]
            self._send(
                200,
                json.dumps({"year": year, "species": sorted(SPECIES)}).encode(),
                "application/json",
            )
        elif parts.path == "/report.pdf":
            self._send(200, tiny_pdf("Annual reptile report 2024"), "application/pdf")
        else:
            self._send(404, b"not found", "text/plain")

    do_HEAD = do_GET

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        data = parse_qs(self.rfile.read(length).decode())
        term = data.get("q", [""])[0]
        hits = [v for v in SPECIES.values() if term.lower() in v.lower()]
        self._send(
            200,
            page(f"Search {term}", "".join(f"<p>{h}</p>" for h in hits)),
            "text/html; charset=utf-8",
        )


def serve_site() -> AbstractContextManager[str]:
    """Run the site on an ephemeral loopback port; yields its base URL."""
    return serve_http(Handler)
