"""``sgrgym snapshot``: record, verify, index, fetch, search, serve, export and import packs.

Handlers import their modules lazily so that ``sgrgym --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgrgym.core.argtypes import iso_timestamp, port_number, positive_int, positive_seconds
from sgrgym.core.output import progress, write_json

if TYPE_CHECKING:
    from sgrgym.cli.options import Areas

EXIT_MISS = 3
EXIT_INVALID = 1
MAX_BODY_FILE = 64 * 1024 * 1024  # a request body read from --data @FILE


def cmd_record(args: argparse.Namespace) -> int:
    # The recorder module must be imported before anything imports requests/urllib3.
    from sgrgym.snapshot.record import Recorder, read_crawl_spec, read_url_list

    spec = read_crawl_spec(args.crawl) if args.crawl else read_url_list(args.urls)
    result = Recorder(
        args.out,
        spec,
        allow_network=args.allow_network,
        fixed_date=args.fixed_date,
        timeout_s=args.timeout,
        progress=None if args.quiet else progress,
    ).run()
    for failure in result.failed:
        print(f"failed: {failure}", file=sys.stderr)
    print(
        f"{result.pack_dir}: recorded {result.recorded}, already there {result.skipped}, "
        f"failed {len(result.failed)}; manifest sha256 {result.manifest_sha256}"
    )
    return 1 if result.failed else 0


def cmd_verify(args: argparse.Namespace) -> int:
    from sgrgym.snapshot.pack import resolve_pack
    from sgrgym.snapshot.verify import verify_pack

    report = verify_pack(resolve_pack(args.pack))
    if args.json:
        write_json(
            json.dumps(
                {
                    "pack": str(report.pack_dir),
                    "manifest_sha256": report.manifest_sha256,
                    "ok": report.ok,
                    "files": report.files,
                    "records": report.records,
                    "problems": report.problems,
                }
            )
        )
    else:
        for problem in report.problems:
            print(f"FAIL {problem}")
        state = "OK" if report.ok else f"{len(report.problems)} problem(s)"
        print(
            f"{report.pack_dir}: {state}; {report.files} files, {report.records} records; "
            f"manifest sha256 {report.manifest_sha256}"
        )
    return 0 if report.ok else EXIT_INVALID


def cmd_index(args: argparse.Namespace) -> int:
    from sgrgym.snapshot.replay import Snapshot

    with Snapshot.open(args.pack, rebuild_index=args.rebuild) as snapshot:
        count = len(snapshot.urls())
        print(f"{snapshot.pack_dir}: {count} archived URLs indexed (pin {snapshot.pin})")
    return 0


def _request_body(args: argparse.Namespace) -> bytes | None:
    """The request body of ``--data``: the text itself, or the bytes of ``@FILE`` (sent as
    they are: never parsed, so any content is fine; only its size is capped)."""
    if args.data is None:
        return None
    if args.data.startswith("@"):
        from sgrgym.core.inputs import read_bytes

        return read_bytes(Path(args.data[1:]), "request body file (--data @FILE)", MAX_BODY_FILE)
    text: bytes = args.data.encode("utf-8", errors="surrogateescape")
    return text


def cmd_fetch(args: argparse.Namespace) -> int:
    from sgrgym.core.errors import UserError
    from sgrgym.snapshot.replay import Snapshot
    from sgrgym.snapshot.text import body_to_text
    from sgrgym.snapshot.urls import check_url

    check_url(args.url)
    method = args.method or ("POST" if args.data is not None else "GET")
    with Snapshot.open(args.pack) as snapshot:
        response = snapshot.fetch(args.url, method, _request_body(args), args.content_type or "")
    body_text = None
    if args.text and response.match != "miss":
        try:
            body_text = body_to_text(response.body, response.content_type)
        except ValueError as exc:
            raise UserError(f"{args.url}: cannot render it as text ({exc})") from None
    if args.json:
        payload: dict[str, Any] = {
            "url": response.url,
            "status": response.status,
            "match": response.match,
            "redirects": list(response.redirects),
            "capture_time": response.capture_time,
            "headers": [list(h) for h in response.headers],
        }
        if body_text is not None:
            payload["text"] = body_text
        else:
            payload["body"] = response.body.decode("utf-8", errors="replace")
        write_json(json.dumps(payload, ensure_ascii=False))
    else:
        if args.include_headers:
            print(f"HTTP {response.status} {response.reason}")
            for name, value in response.headers:
                print(f"{name}: {value}")
            print()
        if body_text is not None:
            print(body_text)
        else:
            sys.stdout.flush()
            sys.stdout.buffer.write(response.body)
    return EXIT_MISS if response.match == "miss" else 0


def cmd_search(args: argparse.Namespace) -> int:
    from sgrgym.core.table import format_table
    from sgrgym.snapshot.replay import Snapshot
    from sgrgym.snapshot.search import search

    with Snapshot.open(args.pack) as snapshot:
        hits = search(snapshot, args.query, args.limit)
    if args.json:
        write_json(json.dumps([h.__dict__ for h in hits], ensure_ascii=False))
    elif not hits:
        print(f"no pages match {args.query!r}")
    else:
        rows = [[str(h.rank), f"{h.score:.4f}", h.url, h.snippet[:80]] for h in hits]
        print(format_table(["#", "Score", "URL", "Snippet"], rows, align="rrll"))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from sgrgym.snapshot.replay import Snapshot
    from sgrgym.snapshot.serve import serve_forever

    with Snapshot.open(args.pack) as snapshot:
        serve_forever(snapshot, args.host, args.port, ready=progress)
    return 0


def cmd_export_wacz(args: argparse.Namespace) -> int:
    from sgrgym.snapshot.wacz import export_wacz

    result = export_wacz(args.pack, args.out)
    print(result)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from sgrgym.snapshot.wacz import MAX_IMPORT_BYTES, import_archives

    result = import_archives(
        args.sources,
        args.out,
        fixed_date=args.fixed_date,
        max_total_bytes=args.max_total_bytes or MAX_IMPORT_BYTES,
        skip_bad_records=args.skip_bad_records,
    )
    print(result)
    return 0


def add_commands(areas: Areas) -> None:
    """Register ``sgrgym snapshot ...`` on the top-level sub-parsers."""
    snap = areas.add_parser(
        "snapshot",
        help="site-state snapshots: record, verify, index, replay offline",
        description="Archived site states as WARC packs, replayed offline.",
    )
    cmds = snap.add_subparsers(dest="command", metavar="COMMAND", required=True)

    record = cmds.add_parser(
        "record",
        help="record URLs or a crawl into a pack (the only command that can use the network)",
        description="Record requests and responses into DIR/warc/*.warc.gz and write "
        "DIR/manifest.json. Resumes: requests already in the pack are skipped. Only loopback "
        "hosts are contacted unless --allow-network is given.",
    )
    source = record.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--urls",
        type=Path,
        metavar="FILE",
        help="one URL per line, or a JSON object per line: "
        '{"url": ..., "method": "POST", "body": ..., "headers": {...}}',
    )
    source.add_argument(
        "--crawl",
        type=Path,
        metavar="SPEC",
        help="crawl spec JSON: seeds, requests, allowed_hosts, url_patterns, max_pages, "
        "delay_s, volatile_params, sites (host, source, licence)",
    )
    record.add_argument("--out", type=Path, required=True, metavar="DIR", help="pack folder")
    record.add_argument(
        "--allow-network", action="store_true", help="allow hosts other than loopback"
    )
    record.add_argument(
        "--fixed-date",
        type=iso_timestamp,
        metavar="ISO",
        help="WARC-Date for every record (e.g. 2026-01-01T00:00:00Z) and request-derived "
        "record ids: the same capture then gives byte-identical files",
    )
    record.add_argument(
        "--timeout", type=positive_seconds, default=30.0, help="seconds per request"
    )
    record.add_argument("--quiet", action="store_true", help="no progress lines")
    record.set_defaults(handler=cmd_record)

    verify = cmds.add_parser(
        "verify",
        help="check file sha256 and every record's digests",
        description="Check every file's sha256 and size against the manifest and every "
        "record's block and payload digests. Exit 0 only when all is well, 1 otherwise.",
    )
    verify.add_argument("pack", metavar="DIR", help="pack folder or name under snapshots/")
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.set_defaults(handler=cmd_verify)

    index = cmds.add_parser(
        "index",
        help="build (or reuse) the pack's DuckDB index",
        description="Build the DuckDB index (captures + full text) of a pack, cached under "
        "DIR/.cache and keyed by the manifest sha256.",
    )
    index.add_argument("pack", metavar="DIR")
    index.add_argument("--rebuild", action="store_true", help="rebuild even if up to date")
    index.set_defaults(handler=cmd_index)

    fetch = cmds.add_parser(
        "fetch",
        help="replay one request from the pack",
        description="Print the archived response to a request. Exit 0 when archived "
        "(exact or rule match), 3 when the pack does not hold it (a miss).",
    )
    fetch.add_argument("pack", metavar="DIR")
    fetch.add_argument("url", metavar="URL")
    fetch.add_argument("--method", help="HTTP method (default GET, or POST with --data)")
    fetch.add_argument("--data", metavar="BODY", help="request body, or @FILE")
    fetch.add_argument("--content-type", help="request body's Content-Type")
    fetch.add_argument("--text", action="store_true", help="HTML/PDF rendered as text")
    fetch.add_argument("-i", "--include-headers", action="store_true", help="print headers")
    fetch.add_argument("--json", action="store_true", help="print one JSON object")
    fetch.set_defaults(handler=cmd_fetch)

    search = cmds.add_parser(
        "search",
        help="full-text search over archived pages",
        description="Rank archived pages for a query (BM25; ties broken by URL).",
    )
    search.add_argument("pack", metavar="DIR")
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--limit", type=positive_int, default=10, help="pages to list (>= 1)")
    search.add_argument("--json", action="store_true")
    search.set_defaults(handler=cmd_search)

    serve = cmds.add_parser(
        "serve",
        help="serve the pack over HTTP (loopback by default)",
        description="An HTTP server answering /replay/<url> and proxy-style requests from "
        "the pack, for HTTP and browser agents. Binds 127.0.0.1 unless --host says otherwise.",
    )
    serve.add_argument("pack", metavar="DIR")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=port_number, default=8765, help="TCP port (0: any free port)")
    serve.set_defaults(handler=cmd_serve)

    export = cmds.add_parser(
        "export-wacz",
        help="write the pack as a WACZ file (ReplayWeb.page, pywb)",
        description="Package the pack as WACZ: archive/, indexes/index.cdxj, pages/pages.jsonl "
        "and datapackage.json with sha256 of every file.",
    )
    export.add_argument("pack", metavar="DIR")
    export.add_argument("out", type=Path, metavar="OUT.wacz")
    export.set_defaults(handler=cmd_export_wacz)

    imp = cmds.add_parser(
        "import",
        help="make a pack from WARC/WACZ files captured elsewhere",
        description="Copy the records of WARC or WACZ files into a new pack (one gzip member "
        "per record) and write its manifest.",
    )
    imp.add_argument("sources", nargs="+", type=Path, metavar="FILE")
    imp.add_argument("--out", type=Path, required=True, metavar="DIR")
    imp.add_argument(
        "--fixed-date",
        type=iso_timestamp,
        metavar="ISO",
        help="manifest 'created' time (YYYY-MM-DDTHH:MM:SSZ)",
    )
    imp.add_argument(
        "--skip-bad-records",
        action="store_true",
        help="import the records whose digests verify and list the others in the manifest's "
        "'skipped' (default: one bad record refuses the whole import)",
    )
    imp.add_argument(
        "--max-total-bytes",
        type=positive_int,
        metavar="N",
        help="refuse an import whose records add up to more than N bytes, decompressed "
        "(default: 512 MiB)",
    )
    imp.set_defaults(handler=cmd_import)
