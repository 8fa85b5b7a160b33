"""Snapshot packs end to end: record from a real loopback site, verify, index, replay offline."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import urllib.request
import zlib
from pathlib import Path

import pytest
from site_server import serve_site
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.core.netguard import loopback_only
from sgrgym.snapshot.index import index_path
from sgrgym.snapshot.pack import load_manifest, resolve_pack
from sgrgym.snapshot.record import CrawlSpec, Recorder, RequestSpec
from sgrgym.snapshot.replay import MATCH_HEADER, Snapshot
from sgrgym.snapshot.search import search
from sgrgym.snapshot.verify import verify_pack
from sgrgym.snapshot.warc import WarcError

DATE = "2026-11-30T00:00:00Z"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def crawl(base: str, **kw: object) -> CrawlSpec:
    return CrawlSpec(
        seeds=[base + "/"],
        requests=[
            RequestSpec(url=base + "/search", method="POST", body="q=naja", headers=FORM),
            RequestSpec(url=base + "/api/species?year=2020&kind=snake"),
        ],
        **kw,  # type: ignore[arg-type]
    )


def live(url: str, data: bytes | None = None) -> bytes:
    request = urllib.request.Request(url, data=data, headers=FORM if data else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        body: bytes = response.read()
    return body


@pytest.fixture(scope="module")
def site_pack(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, bytes]]:
    """A pack recorded from the demo site, plus the bodies the site served (read live)."""
    root = tmp_path_factory.mktemp("packs")
    with loopback_only(), serve_site() as base:
        result = Recorder(root / "demo", crawl(base), fixed_date=DATE).run()
        assert result.recorded == 8 and not result.failed
        urls = [
            base + "/",
            base + "/species/boa?_=1",
            base + "/species/naja?_=1",
            base + "/report.pdf",
            base + "/api/species?year=2020&kind=snake",
        ]
        bodies = {u: live(u) for u in urls}
        bodies["POST"] = live(base + "/search", b"q=naja")
    return root / "demo", base, bodies


def copy_pack(pack: Path, tmp_path: Path, name: str = "copy") -> Path:
    target = tmp_path / name
    shutil.copytree(pack, target, ignore=shutil.ignore_patterns(".cache"))
    return target


def test_replay_is_byte_identical_and_offline(
    site_pack: tuple[Path, str, dict[str, bytes]],
) -> None:
    pack, base, bodies = site_pack
    # The site is stopped; the autouse guard refuses any non-loopback connection.
    with Snapshot.open(pack) as snap:
        for url, body in bodies.items():
            if url == "POST":
                response = snap.fetch(base + "/search", "POST", b"q=naja", FORM["Content-Type"])
            else:
                response = snap.fetch(url)
            assert (response.status, response.match) == (200, "exact"), url
            assert response.body == body
            assert response.header(MATCH_HEADER) == "exact"


def test_rule_matches_follow_declared_rules(site_pack: tuple[Path, str, dict[str, bytes]]) -> None:
    pack, base, bodies = site_pack
    host = base
    with Snapshot.open(pack) as snap:
        for variant in (
            host + "/species/boa?_=999",  # volatile cache-buster dropped
            host + "/species/boa?_=1#section",  # fragment dropped
            host + "/species/%62oa?_=1",  # percent-encoding of an unreserved character
            "HTTP://" + host[len("http://") :] + "/species/boa?_=1",  # scheme case
        ):
            response = snap.fetch(variant)
            assert response.match == "rule", variant
            assert response.body == bodies[base + "/species/boa?_=1"]
        swapped = snap.fetch(base + "/api/species?kind=snake&year=2020")
        assert (
            swapped.match == "rule"
            and swapped.body == bodies[base + "/api/species?year=2020&kind=snake"]
        )
        # A parameter that is not declared volatile is part of the key.
        assert snap.fetch(base + "/api/species?year=2021&kind=snake").match == "miss"


def test_miss_is_deterministic_404(site_pack: tuple[Path, str, dict[str, bytes]]) -> None:
    pack, base, _ = site_pack
    with Snapshot.open(pack) as snap:
        first = snap.fetch(base + "/nowhere")
        again = snap.fetch(base + "/nowhere")
    assert first == again
    assert (first.status, first.match, first.header(MATCH_HEADER)) == (404, "miss", "miss")
    assert first.body == f"not in snapshot: GET {base}/nowhere\n".encode()


def test_post_body_is_part_of_the_key(site_pack: tuple[Path, str, dict[str, bytes]]) -> None:
    pack, base, bodies = site_pack
    with Snapshot.open(pack) as snap:
        assert snap.fetch(base + "/search", "POST", b"q=boa", FORM["Content-Type"]).match == "miss"
        assert snap.fetch(base + "/search").match == "miss"  # GET is another request
        hit = snap.fetch(base + "/search", "POST", b"q=naja", FORM["Content-Type"])
        assert hit.body == bodies["POST"] and b"Naja naja" in hit.body


def test_archived_redirects_are_followed(site_pack: tuple[Path, str, dict[str, bytes]]) -> None:
    pack, base, _ = site_pack
    with Snapshot.open(pack) as snap:
        response = snap.fetch(base + "/old")
        assert response.redirects == (base + "/old",)
        assert response.status == 200 and b"Boa constrictor" in response.body
        unfollowed = snap.fetch(base + "/old", follow_redirects=False)
    assert unfollowed.status == 301 and unfollowed.header("Location") == "/species/boa"


def test_text_of_html_and_pdf(site_pack: tuple[Path, str, dict[str, bytes]]) -> None:
    pack, base, _ = site_pack
    with Snapshot.open(pack) as snap:
        _, pdf = snap.text(base + "/report.pdf")
        _, html = snap.text(base + "/species/naja?_=1")
    assert pdf == "Annual reptile report 2024"
    assert "Species Naja naja lives in the demo region." in html
    assert "var x" not in html and "color:red" not in html


def test_search_is_ranked_and_deterministic(site_pack: tuple[Path, str, dict[str, bytes]]) -> None:
    pack, base, _ = site_pack
    with Snapshot.open(pack) as snap:
        hits = search(snap, "naja")
        assert [h.url for h in hits] == [base + "/species/naja?_=1", base + "/"]
        assert hits[0].score > hits[1].score and "Naja naja" in hits[0].snippet
        assert search(snap, "naja") == hits
        assert search(snap, "annual report")[0].url == base + "/report.pdf"
        assert search(snap, "zebra") == [] and search(snap, "  ") == []
        # Pages that tie on score come back in URL order.
        tied = [h for h in search(snap, "demo region", limit=50)]
        scores = [(-h.score, h.url) for h in tied]
        assert scores == sorted(scores)


def test_one_gzip_member_per_record(site_pack: tuple[Path, str, dict[str, bytes]]) -> None:
    data = (site_pack[0] / "warc/demo-00000.warc.gz").read_bytes()
    members = 0
    while data:
        inflater = zlib.decompressobj(wbits=31)
        assert inflater.decompress(data).startswith(b"WARC/1.0\r\n")
        data = inflater.unused_data
        members += 1
    assert members == load_manifest(site_pack[0]).record_count == 16


def test_recording_twice_from_one_server_is_byte_identical(tmp_path: Path) -> None:
    with serve_site() as base:
        Recorder(tmp_path / "a" / "demo", crawl(base), fixed_date=DATE).run()
        Recorder(tmp_path / "b" / "demo", crawl(base), fixed_date=DATE).run()
    for name in ("warc/demo-00000.warc.gz", "manifest.json"):
        assert (tmp_path / "a/demo" / name).read_bytes() == (
            tmp_path / "b/demo" / name
        ).read_bytes()


def test_resume_skips_done_and_repairs_a_cut_tail(tmp_path: Path) -> None:
    pack = tmp_path / "demo"
    with serve_site() as base:
        first = Recorder(pack, crawl(base, max_pages=3), fixed_date=DATE).run()
        assert first.recorded == 3
        warc = pack / "warc/demo-00000.warc.gz"
        with warc.open("ab") as f:  # a crash in the middle of writing a record
            f.write(gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\n" + b"x" * 500)[:120])
        resumed = Recorder(pack, crawl(base), fixed_date=DATE).run()
    assert (resumed.skipped, resumed.recorded) == (3, 5)
    assert verify_pack(pack).ok


def test_network_needs_the_flag(tmp_path: Path) -> None:
    spec = CrawlSpec(requests=[RequestSpec(url="http://192.0.2.1/page")])
    with pytest.raises(UserError, match="pass --allow-network"):
        Recorder(tmp_path / "net", spec).run()
    assert not (tmp_path / "net").exists()


def test_verify_names_file_and_offset_of_a_flipped_byte(
    site_pack: tuple[Path, str, dict[str, bytes]], tmp_path: Path
) -> None:
    pack = copy_pack(site_pack[0], tmp_path)
    assert verify_pack(pack).ok
    warc = pack / "warc/demo-00000.warc.gz"
    data = bytearray(warc.read_bytes())
    data[len(data) // 2] ^= 0x01
    warc.write_bytes(bytes(data))
    report = verify_pack(pack)
    assert not report.ok
    assert any(p.startswith("warc/demo-00000.warc.gz: sha256") for p in report.problems)
    assert any("warc/demo-00000.warc.gz: record at offset" in p for p in report.problems)
    with pytest.raises(UserError, match="does not match its manifest"):
        Snapshot.open(pack)


def test_index_is_cached_by_manifest_hash(
    site_pack: tuple[Path, str, dict[str, bytes]], tmp_path: Path
) -> None:
    pack = copy_pack(site_pack[0], tmp_path)
    with Snapshot.open(pack) as snap:
        path = index_path(pack, snap.pin)
    stamp = path.stat().st_mtime_ns
    with Snapshot.open(pack):
        pass
    assert path.stat().st_mtime_ns == stamp  # reused
    manifest = load_manifest(pack)
    manifest.sites[0].licence = "CC0-1.0"
    from sgrgym.snapshot.pack import write_manifest

    write_manifest(pack, manifest)
    with Snapshot.open(pack) as snap:
        rebuilt = index_path(pack, snap.pin)
    assert rebuilt != path and rebuilt.is_file() and not path.exists()


def _bomb_warc(path: Path, size: int) -> None:
    with path.open("wb") as f:
        writer = WARCWriter(f, gzip=True)
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.0")
        record = writer.create_warc_record(
            "http://127.0.0.1/zeros",
            "response",
            payload=io.BytesIO(b"\0" * size),
            length=size,
            http_headers=headers,
        )
        writer.write_record(record)


def test_oversized_records_are_capped_and_reported(tmp_path: Path) -> None:
    from sgrgym.core.hashing import sha256_file
    from sgrgym.snapshot.pack import Canonicalization, Manifest, PackFile, write_manifest
    from sgrgym.snapshot.urls import CanonRules

    pack = tmp_path / "bomb"
    (pack / "warc").mkdir(parents=True)
    warc = pack / "warc/bomb.warc.gz"
    _bomb_warc(warc, 4_000_000)
    assert warc.stat().st_size < 50_000  # compresses ~1000:1
    digest, size = sha256_file(warc)
    rules = CanonRules()
    write_manifest(
        pack,
        Manifest(
            pack="bomb",
            created=DATE,
            record_count=1,
            canonicalization=Canonicalization(version="1", sha256=rules.sha256(), rules=rules),
            files=[PackFile(path="warc/bomb.warc.gz", sha256=digest, bytes=size, records=1)],
        ),
    )
    report = verify_pack(pack, max_record_bytes=1_000_000)
    assert any("over the 1000000-byte limit" in p for p in report.problems)
    with (
        Snapshot.open(pack, max_record_bytes=1_000_000) as snap,
        pytest.raises(WarcError, match="larger than the 1000000-byte limit"),
    ):
        snap.fetch("http://127.0.0.1/zeros")


def test_truncated_warc_and_escaping_paths(
    site_pack: tuple[Path, str, dict[str, bytes]], tmp_path: Path
) -> None:
    pack = copy_pack(site_pack[0], tmp_path)
    warc = pack / "warc/demo-00000.warc.gz"
    warc.write_bytes(warc.read_bytes()[:-40])
    report = verify_pack(pack)
    assert any("record at offset" in p and "cut short" in p for p in report.problems)

    manifest = json.loads((pack / "manifest.json").read_text())
    manifest["files"][0]["path"] = "warc/../../outside.warc.gz"
    (pack / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match=r"not a file warc/<name>\.warc\.gz inside the pack"):
        Snapshot.open(pack)


def test_unknown_pack_names_list_what_exists(tmp_path: Path) -> None:
    (tmp_path / "alpha").mkdir()
    (tmp_path / "alpha/manifest.json").write_text("{}")
    with pytest.raises(UserError, match=r"packs under .*: alpha"):
        resolve_pack("beta", root=tmp_path)
    with pytest.raises(UserError, match="not a snapshot pack"):
        resolve_pack(tmp_path / "nothing-here", root=tmp_path / "none")


def test_cli_fetch_verify_search(
    site_pack: tuple[Path, str, dict[str, bytes]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pack, base, _ = site_pack
    assert main(["snapshot", "verify", str(pack)]) == 0
    assert "OK; 1 files, 16 records" in capsys.readouterr().out
    assert main(["snapshot", "fetch", str(pack), base + "/report.pdf", "--text"]) == 0
    assert "Annual reptile report 2024" in capsys.readouterr().out
    assert main(["snapshot", "fetch", str(pack), base + "/missing", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["match"] == "miss"
    code = main(
        [
            "snapshot",
            "fetch",
            str(pack),
            base + "/search",
            "--data",
            "q=naja",
            "--content-type",
            FORM["Content-Type"],
            "--json",
        ]
    )
    assert code == 0 and "Naja naja" in json.loads(capsys.readouterr().out)["body"]
    assert main(["snapshot", "search", str(pack), "naja", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["url"] == base + "/species/naja?_=1"
    broken = copy_pack(pack, tmp_path)
    (broken / "warc/demo-00000.warc.gz").write_bytes(b"not a warc")
    assert main(["snapshot", "verify", str(broken)]) == 1
    assert "FAIL warc/demo-00000.warc.gz" in capsys.readouterr().out
    assert main(["snapshot", "fetch", str(broken), base + "/"]) == 2
    assert "refusing to use it" in capsys.readouterr().err


@pytest.mark.parametrize("chunked", [False, True])
def test_read_response_plain_and_chunked_gzip(tmp_path: Path, chunked: bool) -> None:
    """Plain records take the direct parser; chunked/compressed ones go through warcio."""
    from sgrgym.snapshot.warc import read_response

    text = b"<p>caf\xc3\xa9 table</p>" * 50
    if chunked:
        packed = gzip.compress(text, mtime=0)
        payload = b"%x\r\n%s\r\n0\r\n\r\n" % (len(packed), packed)
        fields = [("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")]
    else:
        payload, fields = text, [("Content-Length", str(len(text)))]
    path = tmp_path / "one.warc.gz"
    with path.open("wb") as f:
        writer = WARCWriter(f, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), *fields], "HTTP/1.1")
        writer.write_record(
            writer.create_warc_record(
                "http://127.0.0.1/p",
                "response",
                payload=io.BytesIO(payload),
                length=len(payload),
                http_headers=http,
            )
        )
    fd = os.open(path, os.O_RDONLY)
    try:
        record = read_response(fd, str(path), 0, path.stat().st_size)
    finally:
        os.close(fd)
    assert (record.status, record.reason, record.body) == (200, "OK", text)
    names = [name.lower() for name, _ in record.headers]
    assert "content-type" in names and "transfer-encoding" not in names
    assert "content-encoding" not in names and "content-length" not in names


def test_resume_with_nothing_new_keeps_the_pin(tmp_path: Path) -> None:
    with serve_site() as base:
        first = Recorder(tmp_path / "demo", crawl(base)).run()
        again = Recorder(tmp_path / "demo", crawl(base)).run()
    assert again.recorded == 0 and again.skipped == first.recorded
    assert again.manifest_sha256 == first.manifest_sha256
