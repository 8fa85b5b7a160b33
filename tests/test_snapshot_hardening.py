"""Snapshot packs against real-world archives and bad input: brotli, gzip layouts, revisits,
redirects out of the pack, altered indexes and manifests, malformed URLs, import limits."""

from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path

import brotli
import pytest
from archive_helpers import (
    DATE,
    http_block,
    response,
    warc_record,
    write_warc,
)

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.snapshot.index import connect, index_path, index_pin_path
from sgrgym.snapshot.pack import MANIFEST, SiteInfo, load_manifest, warc_files
from sgrgym.snapshot.replay import Snapshot
from sgrgym.snapshot.search import search
from sgrgym.snapshot.stream import MAX_HEADER_BYTES, RecordStream, StreamError
from sgrgym.snapshot.verify import verify_pack
from sgrgym.snapshot.wacz import export_wacz, import_archives, surt

SITE = "http://site.example"


def page(title: str, text: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>".encode()


def make_pack(tmp_path: Path, records: list[bytes], name: str = "pack", **kw: object) -> Path:
    source = write_warc(tmp_path / f"{name}-source.warc.gz", records)
    import_archives([source], tmp_path / name, fixed_date=DATE, **kw)  # type: ignore[arg-type]
    return tmp_path / name


def three_pages() -> list[bytes]:
    return [
        response(f"{SITE}/a", page("Alpha", "first page about alders")),
        response(f"{SITE}/b", page("Beta", "second page about birches")),
        response(f"{SITE}/c", page("Gamma", "third page about cedars")),
    ]


# --- web archives ------------------------------------------------------------------------


def test_brotli_bodies_are_decoded_for_replay_text_and_search(tmp_path: Path) -> None:
    html = page("Brotli", "a page compressed with brotli about sequoias")
    headers = [("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "br")]
    pack = make_pack(
        tmp_path, [response(f"{SITE}/br", brotli.compress(html), headers=headers, payload=None)]
    )
    with Snapshot.open(pack) as snapshot:
        answer = snapshot.fetch(f"{SITE}/br")
        assert answer.body == html
        assert answer.header("Content-Encoding") == ""
        assert "sequoias" in snapshot.text(f"{SITE}/br")[1]
        hits = search(snapshot, "sequoias")
    assert [hit.url for hit in hits] == [f"{SITE}/br"] and hits[0].title == "Brotli"


def test_gzip_members_without_record_end_lines_import(tmp_path: Path) -> None:
    # Some writers end each gzip member right after the block (no CRLF CRLF): warcio and
    # pywb read such files, so import must too.
    records = [r[: -len(b"\r\n\r\n")] for r in three_pages()]
    pack = make_pack(tmp_path, records)
    assert verify_pack(pack).ok
    with Snapshot.open(pack) as snapshot:
        assert snapshot.fetch(f"{SITE}/b").body == page("Beta", "second page about birches")
        assert snapshot.fetch(f"{SITE}/c").match == "exact"


def test_whole_file_gzip_without_record_end_lines_imports(tmp_path: Path) -> None:
    source = tmp_path / "one-member.warc.gz"
    source.write_bytes(gzip.compress(b"".join(three_pages())))
    import_archives([source], tmp_path / "pack", fixed_date=DATE)
    assert load_manifest(tmp_path / "pack").record_count == 3


def test_redirect_to_an_unarchived_target_is_served_as_archived(tmp_path: Path) -> None:
    moved = http_block("302 Found", [("Location", "/gone"), ("Content-Length", "0")], b"")
    bad = http_block("301 Moved", [("Location", "http://[::1/x")], b"")
    pack = make_pack(
        tmp_path,
        [
            warc_record("response", f"{SITE}/moved", moved),
            warc_record("response", f"{SITE}/bad-location", bad),
            *three_pages(),
        ],
    )
    with Snapshot.open(pack) as snapshot:
        answer = snapshot.fetch(f"{SITE}/moved")
        assert (answer.status, answer.match, answer.header("Location")) == (302, "exact", "/gone")
        assert answer.redirects == ()
        assert snapshot.fetch(f"{SITE}/bad-location").status == 301


def test_revisits_resolve_to_their_originals(tmp_path: Path) -> None:
    body = page("Original", "the payload stored once")
    original = response(f"{SITE}/original", body, date="2026-11-01T00:00:00Z")
    revisit_block = http_block("200 OK", [("Content-Type", "text/html"), ("X-Seen", "again")], b"")
    profile = ("WARC-Profile", "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest")
    by_uri = warc_record(
        "revisit",
        f"{SITE}/mirror",
        revisit_block,
        payload=body,
        extra=[
            profile,
            ("WARC-Refers-To-Target-URI", f"{SITE}/original"),
            ("WARC-Refers-To-Date", "2026-11-01T00:00:00Z"),
        ],
    )
    by_digest = warc_record("revisit", f"{SITE}/copy", revisit_block, payload=body, extra=[profile])
    orphan = warc_record(
        "revisit", f"{SITE}/orphan", revisit_block, payload=b"nothing like it", extra=[profile]
    )
    pack = make_pack(tmp_path, [original, by_uri, by_digest, orphan])
    with Snapshot.open(pack) as snapshot:
        for url in (f"{SITE}/mirror", f"{SITE}/copy"):
            answer = snapshot.fetch(url)
            assert (answer.status, answer.match, answer.body) == (200, "exact", body), url
            assert answer.header("X-Seen") == "again"
        assert snapshot.fetch(f"{SITE}/orphan").match == "miss"  # no payload in the pack


def test_surt_keys_are_the_reference_implementation() -> None:
    # pywb's keys for these URLs (its canonicalizer is the surt package).
    assert surt("http://x.test/q?node=af%2fcd") == "test,x)/q?node=af/cd"
    assert surt("http://x.test/wiki/C%2B%2B") == "test,x)/wiki/c++"
    assert surt("http://www.Example.org/A/b?z=1&a=2#top") == "org,example)/a/b?a=2&z=1"
    assert surt("http://127.0.0.1:8080") == "1,0,0,127:8080)/"


def test_export_has_no_empty_titles_and_keys_by_surt(tmp_path: Path) -> None:
    records = [
        response(f"{SITE}/untitled", b"<html><title></title><p>no title</p></html>"),
        response(f"{SITE}/q?node=af%2fcd", page("Node", "a node page")),
    ]
    pack = make_pack(tmp_path, records)
    wacz = export_wacz(pack, tmp_path / "pack.wacz").path
    with zipfile.ZipFile(wacz) as zf:
        pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()]
        keys = [line.split(" ")[0] for line in zf.read("indexes/index.cdx").decode().splitlines()]
    untitled = next(p for p in pages[1:] if p["url"].endswith("/untitled"))
    assert untitled["title"] == f"{SITE}/untitled"  # named by its URL, as py-wacz does
    assert all(p["title"] for p in pages)
    assert "example,site)/q?node=af/cd" in keys


def test_target_uri_values_are_kept_byte_for_byte(tmp_path: Path) -> None:
    record = warc_record(
        "response", f"<{SITE}/bracketed>", http_block("200 OK", [], b"in brackets")
    )
    spaced = warc_record("response", f"{SITE}/a b", http_block("200 OK", [], b"with a space"))
    pack = make_pack(tmp_path, [record, spaced])
    stored = gzip.decompress(warc_files(pack)[0].read_bytes())
    assert f"WARC-Target-URI: <{SITE}/bracketed>\r\n".encode() in stored
    assert f"WARC-Target-URI: {SITE}/a b\r\n".encode() in stored
    assert verify_pack(pack).ok
    with Snapshot.open(pack) as snapshot:
        assert snapshot.fetch(f"{SITE}/bracketed").body == b"in brackets"


def test_round_trip_keeps_site_licence_and_model(tmp_path: Path) -> None:
    pack = make_pack(tmp_path, three_pages())
    manifest = load_manifest(pack)
    site = SiteInfo(
        host="site.example", source="hand-made", licence="CC0-1.0", model={"name": "toy"}
    )
    manifest.sites = [site]
    from sgrgym.snapshot.pack import write_manifest

    write_manifest(pack, manifest)
    wacz = export_wacz(pack, tmp_path / "pack.wacz").path
    import_archives([wacz], tmp_path / "again", fixed_date=DATE)
    (restored,) = load_manifest(tmp_path / "again").sites
    assert restored.model_dump() == site.model_dump()


def test_bad_records_are_refused_or_skipped_and_listed(tmp_path: Path) -> None:
    good = three_pages()
    broken = good[1].replace(b"birches", b"beeches")  # block digest no longer matches
    source = write_warc(tmp_path / "mixed.warc.gz", [good[0], broken, good[2]])
    with pytest.raises(UserError, match="--skip-bad-records"):
        import_archives([source], tmp_path / "strict")
    assert not (tmp_path / "strict").exists()
    code = main(
        [
            "snapshot",
            "import",
            str(source),
            "--out",
            str(tmp_path / "lenient"),
            "--skip-bad-records",
            "--fixed-date",
            DATE,
        ]
    )
    assert code == 0
    pack = tmp_path / "lenient"
    manifest = load_manifest(pack)
    assert manifest.record_count == 2
    (skipped,) = manifest.skipped
    assert (skipped.source, skipped.record) == ("mixed.warc.gz", 2)
    assert f"{SITE}/b" in skipped.reason and "digest" in skipped.reason
    assert verify_pack(pack).ok
    with Snapshot.open(pack) as snapshot:
        assert snapshot.fetch(f"{SITE}/b").match == "miss"
        assert snapshot.fetch(f"{SITE}/c").match == "exact"
    # A pack without skipped records keeps its manifest bytes (no empty "skipped" field).
    assert "skipped" not in (make_pack(tmp_path, good, "clean") / MANIFEST).read_text()


class _Zeros:
    """An endless stream of zero bytes that fails the test once read far past any cap."""

    def __init__(self, prefix: bytes, allowed: int) -> None:
        self.prefix, self.allowed, self.given = prefix, allowed, 0

    def read(self, size: int = -1) -> bytes:
        assert self.given <= self.allowed, "read on long after the cap was exceeded"
        size = 1 << 16 if size is None or size < 0 else size
        data, self.prefix = (self.prefix + bytes(size))[:size], self.prefix[size:]
        self.given += len(data)
        return data


@pytest.mark.parametrize("prefix", [b"", b"WARC/1.0\r\n", three_pages()[0]])
def test_a_stream_of_zeros_is_refused_within_the_caps(prefix: bytes) -> None:
    stream = RecordStream(_Zeros(prefix, 4 * MAX_HEADER_BYTES), cap=1 << 20)
    with pytest.raises(StreamError):
        for record in stream.records():
            for _ in stream.block(record):
                pass


def test_import_has_a_total_cap(tmp_path: Path) -> None:
    source = write_warc(tmp_path / "big.warc.gz", three_pages())
    with pytest.raises(UserError, match="--max-total-bytes"):
        import_archives([source], tmp_path / "pack", max_total_bytes=400)
    assert not (tmp_path / "pack").exists()
    text = tmp_path / "zeros.warc"
    text.write_bytes(b"WARC/1.0\r\n" + bytes(3 * MAX_HEADER_BYTES))
    with pytest.raises(UserError, match=r"zeros.warc: record 1: .*header over"):
        import_archives([text], tmp_path / "pack")


# --- integrity ---------------------------------------------------------------------------


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return make_pack(tmp_path, three_pages())


def _point_a_at_b(pack: Path) -> None:
    """Alter the index: the row of /a gets the offset and length of /b."""
    with Snapshot.open(pack) as snapshot:  # builds the index
        pin = snapshot.pin
    con = connect(index_path(pack, pin), read_only=False)
    try:
        offset, length = con.execute(
            'SELECT "offset", length FROM captures WHERE url = ?', [f"{SITE}/b"]
        ).fetchone()
        con.execute(
            'UPDATE captures SET "offset" = ?, length = ? WHERE url = ?',
            [offset, length, f"{SITE}/a"],
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()


def test_an_altered_index_is_rebuilt_not_trusted(pack: Path) -> None:
    _point_a_at_b(pack)
    with Snapshot.open(pack) as snapshot:
        answer = snapshot.fetch(f"{SITE}/a")
    assert answer.body == page("Alpha", "first page about alders")


def test_an_index_altered_with_its_pin_is_caught_at_read(pack: Path) -> None:
    _point_a_at_b(pack)
    from sgrgym.core.hashing import sha256_file

    index = next((pack / ".cache").glob("index-*.duckdb"))
    index_pin_path(index).write_text(sha256_file(index)[0] + "\n")  # the pin re-made to match
    with Snapshot.open(pack) as snapshot:
        assert snapshot.fetch(f"{SITE}/a").body == page("Alpha", "first page about alders")
        assert snapshot.fetch(f"{SITE}/b").body == page("Beta", "second page about birches")


def _edit_manifest(pack: Path, edit: object) -> None:
    data = json.loads((pack / MANIFEST).read_text())
    edit(data)  # type: ignore[operator]
    (pack / MANIFEST).write_text(json.dumps(data, indent=2))


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda m: m["canonicalization"]["rules"].update(volatile_params=["x"]), "sha256"),
        (lambda m: m["canonicalization"].update(version="9"), "version"),
        (lambda m: m.update(record_count=m["record_count"] + 1), "record_count"),
    ],
)
def test_manifest_contradictions_are_refused_everywhere(
    pack: Path, edit: object, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit_manifest(pack, edit)
    with pytest.raises(UserError, match=field):
        Snapshot.open(pack)
    assert main(["snapshot", "fetch", str(pack), f"{SITE}/a"]) == 2
    assert field in capsys.readouterr().err
    report = verify_pack(pack)
    assert not report.ok and any(field in p for p in report.problems)
    with pytest.raises(UserError, match=field):
        export_wacz(pack, pack.parent / "out.wacz")


def test_file_record_counts_are_checked_against_the_files(pack: Path) -> None:
    def edit(m: dict[str, object]) -> None:
        m["files"][0]["records"] += 1  # type: ignore[index]
        m["record_count"] += 1  # type: ignore[operator]

    _edit_manifest(pack, edit)
    with pytest.raises(UserError, match="holds 3 records, its manifest says 4"):
        Snapshot.open(pack)
    assert any("3 readable records, manifest says 4" in p for p in verify_pack(pack).problems)
    with pytest.raises(UserError, match="holds 3 records, its manifest says 4"):
        export_wacz(pack, pack.parent / "out.wacz")


# --- bad input: clear errors, exit 2 -----------------------------------------------------


def test_malformed_urls_ports_and_limits(pack: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for url in ("http://[::1/", "http://site.example:99999/", "not a url", "x" * 100_000):
        assert main(["snapshot", "fetch", str(pack), url]) == 2, url[:40]
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err) < 600 and "URL" in err
    for argv in (
        ["snapshot", "serve", str(pack), "--port", "99999"],
        ["snapshot", "search", str(pack), "alders", "--limit", "-5"],
        ["snapshot", "search", str(pack), "alders", "--limit", "0"],
    ):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        assert "Traceback" not in capsys.readouterr().err
    with Snapshot.open(pack) as snapshot:  # agents asking for a malformed URL get a miss
        assert snapshot.fetch("http://[::1/").match == "miss"


def test_fetch_data_file_errors_are_clear(pack: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for target, message in ((pack, "is a folder"), (pack / "none", "not found")):
        assert main(["snapshot", "fetch", str(pack), f"{SITE}/a", "--data", f"@{target}"]) == 2
        err = capsys.readouterr().err
        assert message in err and str(target) in err and "Traceback" not in err


def test_long_lines_are_not_echoed_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("y" * 1_000_000 + "\n")
    assert main(["snapshot", "record", "--urls", str(urls), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert f"{urls}:1" in err and len(err) < 600
    broken = tmp_path / "broken.txt"
    broken.write_text("http://[::1/\n")
    assert main(["snapshot", "record", "--urls", str(broken), "--out", str(tmp_path / "p")]) == 2
    assert f"{broken}:1" in capsys.readouterr().err


def test_deep_json_bodies_and_bad_crawl_urls(
    pack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 10_000 + b"]" * 10_000)
    argv = ["snapshot", "fetch", str(pack), f"{SITE}/a", "--data", f"@{deep}"]
    assert main([*argv, "--content-type", "application/json"]) == 3  # a miss, not a crash
    spec = tmp_path / "crawl.json"
    spec.write_text(json.dumps({"seeds": ["http://127.0.0.1:1/", "http://[::1/"]}))
    assert main(["snapshot", "record", "--crawl", str(spec), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert f"{spec}: invalid crawl spec: seeds.1:" in err and "Traceback" not in err


def test_import_names_folders_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is a folder"):
        import_archives([tmp_path], tmp_path / "pack")
    with pytest.raises(UserError, match="file not found"):
        import_archives([tmp_path / "nothing.warc"], tmp_path / "pack")


# --- build-packs: always checked against the committed pin --------------------------------


def test_build_elsewhere_is_checked_against_the_committed_pin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sgr_helpers import write_jsonl
    from toy_site import SOUTH_TWO_PAGES, TREES_BY_HEIGHT, ToySite

    from sgrgym.sgr.sites.build import build_pack
    from sgrgym.sgr.tasks import load_tasks

    tasks = load_tasks([write_jsonl(tmp_path / "c.jsonl", [TREES_BY_HEIGHT, SOUTH_TWO_PAGES])])
    committed = tmp_path / "snapshots" / "toy"
    with pytest.raises(UserError, match="no pinned manifest"):
        build_pack(committed, [ToySite()], tasks)  # no pin yet: only --update-pin writes one
    assert not (committed / MANIFEST).exists()
    assert build_pack(committed, [ToySite()], tasks, update_pin=True).new_pin
    pin = committed / MANIFEST
    elsewhere = build_pack(tmp_path / "new" / "toy", [ToySite()], tasks, pin=pin)
    assert not elsewhere.new_pin and not elsewhere.repinned
    assert (tmp_path / "new" / "toy" / MANIFEST).read_bytes() == pin.read_bytes()
    with pytest.raises(UserError, match="differs from its pinned manifest"):
        build_pack(tmp_path / "other" / "toy", [ToySite()], tasks[:1], pin=pin)
    assert not (tmp_path / "other" / "toy" / MANIFEST).exists()
    # The command: --out elsewhere, no committed pin in the data home's snapshots/ -> refused.
    monkeypatch.chdir(tmp_path / "new")
    monkeypatch.setenv("SGRGYM_HOME", str(tmp_path / "new"))
    code = main(
        [
            "sgr",
            "build-packs",
            "--pack",
            "demo",
            "--out",
            str(tmp_path / "fresh"),
            "--tasks",
            str(tmp_path / "c.jsonl"),
            "--sites",
            "elements",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "no pinned manifest" in err and str(Path("snapshots/demo/manifest.json")) in err
    assert not (tmp_path / "fresh" / "demo" / MANIFEST).exists()
