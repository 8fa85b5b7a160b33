"""Benchmark: build a pack's index, and read pages as agents fetch them, in one run.

Index build (``snapshot index``), on a copy of a pack (default: the demo pack, real site pages
with tables and forms), three ways interleaved over several rounds:

- ``sgrgym``: :func:`sgrgym.snapshot.index.build_index` (page words by lxml, one Arrow bulk
  insert per table, the BM25 index);
- ``layout+rows``: the same records indexed the previous way, each page laid out by inscriptis
  and every row inserted with ``executemany``;
- ``floor``: the raw libraries doing the least an index of the same pages needs: warcio reads
  every record, lxml parses each HTML page and takes its ``text_content``, one Arrow insert
  per table, the same BM25 index.

Page text (what ``fetch`` hands an agent): over every archived HTML page of the pack, the raw
read (:meth:`Snapshot.fetch`, the archived bytes), then ``SgrEnv.fetch(url).text`` the first
time a process reads the page and again (the text is kept for the last pages read).

Prints medians and ratios from this run. Usage:
``python benchmarks/bench_snapshot_index.py [--pack DIR] [--rounds 5] [--pages 300]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from sgrgym.snapshot import index
from sgrgym.snapshot.pack import load_manifest, manifest_sha256, warc_files
from sgrgym.snapshot.reading import read_page
from sgrgym.snapshot.text import html_to_text


def copy_pack(pack: Path, into: Path) -> Path:
    """The pack's manifest and WARC files copied to ``into`` (no index)."""
    shutil.copy2(pack / "manifest.json", into / "manifest.json")
    shutil.copytree(pack / "warc", into / "warc")
    return into


def build_sgrgym(pack: Path) -> None:
    index.build_index(pack, load_manifest(pack), manifest_sha256(pack))


def build_layout_rows(pack: Path) -> None:
    """The same captures and pages, indexed with inscriptis text and row-by-row inserts."""
    import os

    from sgrgym.snapshot.warc import read_response

    rows, texts = index._capture_rows(pack, load_manifest(pack), None)
    pages = []
    for relative, record in texts:
        path = str(pack / relative)
        fd = os.open(path, os.O_RDONLY)
        try:
            body = read_response(fd, path, record.offset, record.length).body
        finally:
            os.close(fd)
        pages.append((record.target_uri, "", html_to_text(body)))
    target = pack / "layout-rows.duckdb"
    target.unlink(missing_ok=True)
    con = index.connect(target, read_only=False)
    try:
        for name, columns in (("captures", index.CAPTURE_COLUMNS), ("pages", index.PAGE_COLUMNS)):
            index._create(con, name, columns)
        marks = ",".join("?" * len(index.CAPTURE_COLUMNS))
        con.executemany(f"INSERT INTO captures VALUES ({marks})", rows)
        con.executemany("INSERT INTO pages VALUES (?,?,?)", pages)
        con.execute("PRAGMA create_fts_index('pages', 'url', 'title', 'text', overwrite=1)")
        con.execute("CHECKPOINT")
    finally:
        con.close()


def build_floor(pack: Path) -> None:
    """Raw warcio + lxml + one Arrow insert per table + the BM25 index."""
    import lxml.html
    import pyarrow as pa

    urls, offsets, pages = [], [], []
    for warc in warc_files(pack):
        with warc.open("rb") as stream:
            records = ArchiveIterator(stream)
            for record in records:
                if record.rec_type != "response":
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI")
                body = record.content_stream().read()
                urls.append(url)
                offsets.append(records.get_record_offset())
                mime = record.http_headers.get_header("Content-Type") if record.http_headers else ""
                if mime and "html" in mime and body.strip():
                    text = lxml.html.document_fromstring(body).text_content()
                    pages.append((url, text))
    target = pack / "floor.duckdb"
    target.unlink(missing_ok=True)
    con = index.connect(target, read_only=False)
    try:
        captures = pa.table({"url": urls, "offset": pa.array(offsets, pa.int64())})
        texts = pa.table({"url": [u for u, _ in pages], "text": [t for _, t in pages]})
        con.register("c", captures)
        con.register("p", texts)
        con.execute("CREATE TABLE captures AS SELECT * FROM c")
        con.execute("CREATE TABLE pages AS SELECT * FROM p")
        con.execute("PRAGMA create_fts_index('pages', 'url', 'text', overwrite=1)")
        con.execute("CHECKPOINT")
    finally:
        con.close()


def bench_build(pack: Path, rounds: int) -> dict[str, float]:
    ways = {"sgrgym": build_sgrgym, "layout+rows": build_layout_rows, "floor": build_floor}
    times: dict[str, list[float]] = {name: [] for name in ways}
    build_sgrgym(pack)  # warm-up: imports, page cache
    for r in range(rounds):
        order = list(ways) if r % 2 == 0 else list(reversed(ways))
        for name in order:
            start = time.perf_counter()
            ways[name](pack)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def bench_fetch(pack_name: str, pages: int) -> dict[str, float]:
    """Median ms per page: raw read, fetch text on first read, fetch text read again."""
    from sgrgym.sgr.make import make_env

    env = make_env(pack_name)
    urls = [u for u in env.snapshot.urls() if "html" in env.snapshot.fetch(u).content_type]
    urls = urls[: min(pages, 256)]  # within what read_page keeps
    raw, first, again = [], [], []
    for url in urls:
        start = time.perf_counter()
        env.snapshot.fetch(url)
        raw.append(time.perf_counter() - start)
    read_page.cache_clear()
    for target in (first, again):
        for url in urls:
            start = time.perf_counter()
            env.fetch(url).text  # noqa: B018 - the text is what is timed
            target.append(time.perf_counter() - start)
    env.close()
    ms = {name: statistics.median(t) * 1000 for name, t in (("raw", raw), ("first", first))}
    ms["again"] = statistics.median(again) * 1000
    ms["pages"] = len(urls)
    return ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pack", type=Path, default=Path("snapshots/demo"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pages", type=int, default=256, help="pages fetched (at most 256)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pack = copy_pack(args.pack, Path(tmp))
        records = sum(f.records for f in load_manifest(pack).files)
        took = bench_build(pack, args.rounds)
    print(f"index build, {records} records, median of {args.rounds} rounds:")
    for name, seconds in took.items():
        print(f"  {name:<12} {seconds:7.2f} s  {seconds / records * 1000:6.2f} ms/record")
    print(f"  previous way / sgrgym: {took['layout+rows'] / took['sgrgym']:.1f}x (goal >= 5x)")
    print(f"  sgrgym / raw-library floor: {took['sgrgym'] / took['floor']:.2f}x")
    ms = bench_fetch(str(args.pack), args.pages)
    print(f"fetch text, {ms['pages']:.0f} HTML pages, median ms per page:")
    print(f"  raw read {ms['raw']:.3f}, first read {ms['first']:.3f}, read again {ms['again']:.3f}")
    print(
        f"  first / raw: {ms['first'] / ms['raw']:.1f}x; again / raw: "
        f"{ms['again'] / ms['raw']:.2f}x (goal <= 2x)"
    )


if __name__ == "__main__":
    main()
