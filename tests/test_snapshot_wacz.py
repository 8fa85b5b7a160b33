"""WACZ export and WARC/WACZ import: contents, determinism, round trip, bad input."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from site_server import serve_site
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from sgrgym.core.errors import UserError
from sgrgym.snapshot.pack import load_manifest, warc_files
from sgrgym.snapshot.record import CrawlSpec, Recorder
from sgrgym.snapshot.replay import Snapshot
from sgrgym.snapshot.verify import verify_pack
from sgrgym.snapshot.wacz import export_wacz, import_archives, surt, timestamp14
from sgrgym.snapshot.warc import read_response, scan_warc

DATE = "2026-11-30T00:00:00Z"


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, str]:
    """A pack recorded from the demo site, and the site's base URL."""
    with serve_site() as base:
        Recorder(tmp_path / "demo", CrawlSpec(seeds=[base + "/"]), fixed_date=DATE).run()
    return tmp_path / "demo", base


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_surt_and_timestamp() -> None:
    assert surt("http://www.Example.org/A/b?z=1&a=2#top") == "org,example)/a/b?a=2&z=1"
    assert surt("https://example.org:443/") == "org,example)/"
    assert surt("http://127.0.0.1:8080") == "1,0,0,127:8080)/"
    assert timestamp14("2026-11-30T01:02:03.5Z") == "20261130010203"


def test_export_contents(demo: tuple[Path, str], tmp_path: Path) -> None:
    pack, base = demo
    result = export_wacz(pack, tmp_path / "out" / "demo.wacz")
    assert result.sha256 == hashlib.sha256(result.path.read_bytes()).hexdigest()
    assert str(result.path) in str(result) and result.sha256 in str(result)
    (warc,) = warc_files(pack)
    with zipfile.ZipFile(result.path) as zf:
        names = zf.namelist()
        assert names == sorted(names)
        assert set(names) == {
            "archive/demo-00000.warc.gz",
            "datapackage-digest.json",
            "datapackage.json",
            "indexes/index.cdx",
            "pages/pages.jsonl",
        }
        for info in zf.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            assert info.date_time == (1980, 1, 1, 0, 0, 0)
        assert zf.read("archive/demo-00000.warc.gz") == warc.read_bytes()

        package = json.loads(zf.read("datapackage.json"))
        assert package["profile"] == "data-package"
        assert package["wacz_version"] == "1.1.1"
        assert package["created"] == load_manifest(pack).created == DATE
        assert package["software"].startswith("sgrgym ")
        listed = {r["path"] for r in package["resources"]}
        assert listed == set(names) - {"datapackage.json", "datapackage-digest.json"}
        for resource in package["resources"]:
            data = zf.read(resource["path"])
            assert resource["hash"] == "sha256:" + hashlib.sha256(data).hexdigest()
            assert resource["bytes"] == len(data)
        digest = json.loads(zf.read("datapackage-digest.json"))
        expected = "sha256:" + hashlib.sha256(zf.read("datapackage.json")).hexdigest()
        assert digest == {"path": "datapackage.json", "hash": expected}

        lines = zf.read("indexes/index.cdx").decode().splitlines()
        pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()]

    assert lines == sorted(lines)
    responses = [r for r in scan_warc(warc) if r.warc_type == "response"]
    assert len(lines) == len(responses) == result.captures
    fd = os.open(warc, os.O_RDONLY)
    try:
        for line in lines:
            key, ts, blob = line.split(" ", 2)
            fields = json.loads(blob)
            assert key == surt(fields["url"]) and ts == "20261130000000"
            assert fields["filename"] == "demo-00000.warc.gz"
            http = read_response(fd, str(warc), int(fields["offset"]), int(fields["length"]))
            assert str(http.status) == fields["status"]
    finally:
        os.close(fd)
    port = base.rsplit(":", 1)[1]
    assert any(line.startswith(f"1,0,0,127:{port})/ ") for line in lines)

    assert pages[0] == {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
    urls = {page["url"] for page in pages[1:]}
    species = {f"{base}/species/{name}?_=1" for name in ("boa", "naja", "vipera")}
    assert urls == {base + "/"} | species
    assert all(page["ts"] == DATE for page in pages[1:])
    assert {"Reptile index", "Boa constrictor"} <= {page["title"] for page in pages[1:]}
    assert result.pages == len(pages) - 1


def test_export_is_deterministic(demo: tuple[Path, str], tmp_path: Path) -> None:
    first = export_wacz(demo[0], tmp_path / "a.wacz")
    second = export_wacz(str(demo[0]), tmp_path / "b.wacz")
    assert first.path.read_bytes() == second.path.read_bytes()
    assert first.sha256 == second.sha256
    assert _leftovers(tmp_path) == []


def test_export_refuses_damaged_pack(demo: tuple[Path, str], tmp_path: Path) -> None:
    (warc,) = warc_files(demo[0])
    warc.write_bytes(warc.read_bytes() + b"x")
    with pytest.raises(UserError, match="does not match its manifest"):
        export_wacz(demo[0], tmp_path / "demo.wacz")
    assert not (tmp_path / "demo.wacz").exists()


def test_wacz_round_trip(demo: tuple[Path, str], tmp_path: Path) -> None:
    pack, base = demo
    wacz = export_wacz(pack, tmp_path / "demo.wacz").path
    result = import_archives([wacz], tmp_path / "copy", fixed_date=DATE)
    copy = tmp_path / "copy"
    assert result.pack_dir == copy and str(copy) in str(result)
    assert verify_pack(copy).ok
    manifest = load_manifest(copy)
    assert manifest.pack == "copy" and manifest.created == DATE
    assert manifest.record_count == result.records == load_manifest(pack).record_count
    assert [(s.host, s.source) for s in manifest.sites] == [(base.split("//")[1], "demo.wacz")]
    assert _leftovers(tmp_path) == []
    with Snapshot.open(pack) as original, Snapshot.open(copy) as imported:
        assert imported.urls() == original.urls()
        for url in original.urls():
            want, got = original.fetch(url), imported.fetch(url)
            assert (got.status, got.body, got.match) == (want.status, want.body, want.match)
    again = import_archives([wacz], tmp_path / "again", fixed_date=DATE)
    assert again.records == result.records
    assert warc_files(tmp_path / "again")[0].read_bytes() == warc_files(copy)[0].read_bytes()


def _block_digest(block: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(block).digest()).decode()


def _plain_warc() -> bytes:
    """An uncompressed WARC: a response written by warcio, then one whose HTTP headers are
    not in warcio's spelling (no space after the colon, a non-ASCII value)."""
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=False)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
    writer.write_record(
        writer.create_warc_record(
            "http://site.example/a",
            "response",
            payload=io.BytesIO(b"<title>A</title>page a"),
            http_headers=http,
            warc_headers_dict={"WARC-Date": DATE},
        )
    )
    block = b"HTTP/1.1 200 OK\r\nContent-Type:text/plain\r\nX-Name: caf\xc3\xa9\r\n\r\npage b"
    headers = (
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-"
        f"000000000001>\r\nWARC-Date: {DATE}\r\nWARC-Target-URI: http://site.example/b\r\n"
        "Content-Type: application/http; msgtype=response\r\n"
        f"WARC-Block-Digest: {_block_digest(block)}\r\nContent-Length: {len(block)}\r\n\r\n"
    )
    return out.getvalue() + headers.encode() + block + b"\r\n\r\n"


@pytest.mark.parametrize(
    ("name", "encode"),
    [("plain.warc", lambda data: data), ("whole.warc.gz", gzip.compress)],
)
def test_import_warc(tmp_path: Path, name: str, encode: Callable[[bytes], bytes]) -> None:
    source = tmp_path / name
    source.write_bytes(encode(_plain_warc()))
    result = import_archives([source], tmp_path / "pack", fixed_date=DATE)
    assert result.records == 2
    report = verify_pack(tmp_path / "pack")
    assert report.ok, report.problems
    with Snapshot.open(tmp_path / "pack") as snapshot:
        assert snapshot.fetch("http://site.example/a").body == b"<title>A</title>page a"
        page = snapshot.fetch("http://site.example/b")
        assert page.body == b"page b"
        assert page.header("X-Name") == "café"
    # The block is copied byte for byte, not re-serialized in warcio's spelling.
    copied = gzip.decompress(warc_files(tmp_path / "pack")[0].read_bytes())
    assert b"Content-Type:text/plain\r\nX-Name: caf\xc3\xa9\r\n" in copied
    assert load_manifest(tmp_path / "pack").sites[0].source == name


def _tampered(wacz: Path, target: Path) -> Path:
    """The WACZ with one byte of its WARC flipped (zip CRC left stale)."""
    data = bytearray(wacz.read_bytes())
    with zipfile.ZipFile(wacz) as zf:
        warc = zf.read("archive/demo-00000.warc.gz")
    start = bytes(data).find(warc)
    data[start + len(warc) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    return target


def _rezipped(wacz: Path, target: Path, extra: dict[str, bytes]) -> Path:
    """The WACZ rewritten with entries replaced or added (valid CRCs)."""
    with zipfile.ZipFile(wacz) as src, zipfile.ZipFile(target, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, extra.pop(info.filename, src.read(info)))
        for name, data in extra.items():
            dst.writestr(name, data)
    return target


def test_bad_input_is_refused(demo: tuple[Path, str], tmp_path: Path) -> None:
    wacz = export_wacz(demo[0], tmp_path / "demo.wacz").path
    with zipfile.ZipFile(wacz) as zf:
        warc = bytearray(zf.read("archive/demo-00000.warc.gz"))
    warc[len(warc) // 2] ^= 0xFF
    plain = tmp_path / "plain.warc"
    plain.write_bytes(_plain_warc())
    truncated = tmp_path / "cut.warc.gz"
    truncated.write_bytes(gzip.compress(_plain_warc())[:-40])
    text = tmp_path / "notes.warc"
    text.write_text("just some notes\n")
    wrong = tmp_path / "wrong.warc"
    wrong.write_bytes(_plain_warc().replace(b"page b", b"page c"))  # block digest now wrong
    cases = [
        (_tampered(wacz, tmp_path / "flipped.wacz"), "flipped.wacz: .*damaged"),
        (
            _rezipped(wacz, tmp_path / "altered.wacz", {"archive/demo-00000.warc.gz": bytes(warc)}),
            "altered",
        ),
        (_rezipped(wacz, tmp_path / "evil.wacz", {"../evil": b"x"}), "'../evil' escapes"),
        (truncated, "cut.warc.gz"),
        (text, "not a WARC file"),
        (wrong, "wrong.warc: response http://site.example/b: block digest failed"),
    ]
    for source, message in cases:
        with pytest.raises(UserError, match=message):
            import_archives([source], tmp_path / "bad")
        assert not (tmp_path / "bad").exists()
    with pytest.raises(UserError, match="limit"):
        import_archives([plain], tmp_path / "bad", max_record_bytes=20)
    assert not (tmp_path / "bad").exists()
    assert _leftovers(tmp_path) == []


def test_import_refuses_existing_pack(demo: tuple[Path, str], tmp_path: Path) -> None:
    source = tmp_path / "plain.warc"
    source.write_bytes(_plain_warc())
    before = (demo[0] / "manifest.json").read_bytes()
    with pytest.raises(UserError, match="already a snapshot pack"):
        import_archives([source], demo[0])
    assert (demo[0] / "manifest.json").read_bytes() == before
    with pytest.raises(UserError, match="pack folder name"):
        import_archives([source], tmp_path / "Bad Name")


def test_a_body_that_inflates_past_the_cap_is_not_imported(tmp_path: Path) -> None:
    """A gzip-encoded response that decodes past the record cap (a decompression bomb) is
    refused at import, so it can never break the pack's index, fetch and search later."""
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True)
    bomb = gzip.compress(b"\0" * 3_000_000)  # ~3 KB on disk
    http = StatusAndHeaders(
        "200 OK",
        [("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
        protocol="HTTP/1.1",
    )
    writer.write_record(
        writer.create_warc_record(
            "http://site.example/bomb",
            "response",
            payload=io.BytesIO(bomb),
            http_headers=http,
            warc_headers_dict={"WARC-Date": DATE},
        )
    )
    source = tmp_path / "bomb.warc.gz"
    source.write_bytes(out.getvalue() + gzip.compress(_plain_warc()))
    with pytest.raises(UserError, match="larger than the 1000000-byte limit"):
        import_archives([source], tmp_path / "bad", max_record_bytes=1_000_000)
    assert not (tmp_path / "bad").exists() and _leftovers(tmp_path) == []
    result = import_archives(
        [source], tmp_path / "rest", max_record_bytes=1_000_000, skip_bad_records=True
    )
    assert result.records == 2 and result.skipped == 1
    with Snapshot.open(tmp_path / "rest", max_record_bytes=1_000_000) as snapshot:
        assert snapshot.fetch("http://site.example/b").body == b"page b"


def test_a_listed_entry_over_the_cap_is_refused_uninflated(
    demo: tuple[Path, str], tmp_path: Path
) -> None:
    wacz = export_wacz(demo[0], tmp_path / "demo.wacz").path
    zeros = b"\0" * 3_000_000  # deflates to ~3 KB
    with zipfile.ZipFile(wacz) as zf:
        package = json.loads(zf.read("datapackage.json"))
    package["resources"].append(
        {
            "name": "zeros.warc.gz",
            "path": "archive/zeros.warc.gz",
            "hash": "sha256:" + hashlib.sha256(zeros).hexdigest(),
            "bytes": len(zeros),
        }
    )

    def listing(name: str) -> Path:
        """The WACZ with the zeros entry and ``package`` as its (re-digested) listing."""
        data = json.dumps(package).encode()
        digest = json.dumps({"path": "datapackage.json", "hash": f"sha256:{_sha256(data)}"})
        extra = {"datapackage.json": data, "datapackage-digest.json": digest.encode()}
        return _rezipped(wacz, tmp_path / name, {**extra, "archive/zeros.warc.gz": zeros})

    with pytest.raises(UserError, match=r"inflates to 3000000 bytes, over the import's 1000000"):
        import_archives([listing("bomb.wacz")], tmp_path / "bad", max_total_bytes=1_000_000)
    package["resources"][-1]["bytes"] = 100  # the listing disagrees with the zip's own size
    with pytest.raises(UserError, match="3000000 bytes, not 100 as"):
        import_archives([listing("lying.wacz")], tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_warc_imported_twice_does_not_repeat_record_ids(tmp_path: Path) -> None:
    source = tmp_path / "plain.warc"
    source.write_bytes(_plain_warc())
    first = r"repeats the record at warc/twice-00000\.warc\.gz offset 0"
    with pytest.raises(UserError, match=first):
        import_archives([source, source], tmp_path / "twice")
    assert not (tmp_path / "twice").exists()
    result = import_archives([source, source], tmp_path / "once", skip_bad_records=True)
    assert result.records == 2 and result.skipped == 2
