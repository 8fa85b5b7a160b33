"""Build a demo pack: record the replica sites' states from their apps on 127.0.0.1 into WARC.

The pack is built at set-up from the installed data packages and checked against the pinned
``manifest.json`` committed in ``snapshots/<pack>/``: the same package versions and code give
byte-identical WARC files, so the manifests match; anything else is a clear error (or, with
``update_pin``, a new pin). A pack built elsewhere (``--out``) is checked against the
committed pin all the same, never given a pin of its own. The apps are only used here: tests
and runs read the archive.

States recorded per site: what the site lists as worth archiving, plus every state on the
reference paths of the site's tasks. Each app is recorded through a loopback proxy so that
pages are archived under the site's own reserved host name (``<site>.sgrgym.test``).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from sgrgym.core.errors import PinError, UserError
from sgrgym.core.inputs import field_problem
from sgrgym.core.loopback import serve_http
from sgrgym.core.output import Say
from sgrgym.sgr.sites.app import SiteApp
from sgrgym.sgr.sites.reference import reference_of, walk
from sgrgym.sgr.tasks import ScoringTask
from sgrgym.snapshot.pack import (
    CACHE_DIR,
    MANIFEST,
    WARC_DIR,
    Manifest,
    SiteInfo,
    load_manifest,
    manifest_sha256,
)
from sgrgym.snapshot.record import CrawlSpec, Recorder, RequestSpec
from sgrgym.snapshot.verify import verify_pack

PACK_DATE = "2026-01-01T00:00:00Z"


@dataclass
class BuildResult:
    pack_dir: Path
    manifest_sha256: str
    records: int
    states: dict[str, int]  # site -> states recorded
    repinned: bool  # an existing pin was replaced (update_pin)
    new_pin: bool = False  # there was no pin: this build wrote the first one


def site_info(app: SiteApp) -> SiteInfo:
    """The manifest entry of a site: host, data source, licence, and its site model."""
    model = app.model
    return SiteInfo(
        host=model.host,
        source=model.source,
        licence=model.licence,
        model=model.model_dump(mode="json"),
    )


def site_urls(app: SiteApp, tasks: Sequence[ScoringTask]) -> list[str]:
    """The URLs to archive for ``app``: its own list, then its tasks' reference states."""
    model = app.model
    urls = [model.url(state) for state in app.states()]
    for task in tasks:
        reference = reference_of(task)
        if reference is not None and reference.site == model.name:
            urls += [model.url(state) for state in walk(model, reference.path)]
    return list(dict.fromkeys(urls))


def _record_site(work: Path, app: SiteApp, urls: list[str], sites: list[SiteInfo]) -> None:
    with serve_http(app.handler()) as base:
        spec = CrawlSpec(
            requests=[RequestSpec(url=url) for url in urls],
            proxy=base,
            follow_links=False,
            max_pages=len(urls) + 1,
            sites=sites,
        )
        result = Recorder(work, spec, fixed_date=PACK_DATE).run()
    if result.failed:
        raise UserError(f"{app.model.name}: could not record: " + "; ".join(result.failed[:5]))


def _manifest_at(path: Path) -> Manifest:
    """The manifest in the file ``path`` (which need not be named manifest.json)."""
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise UserError(f"{path}: not a pack manifest ({field_problem(exc)})") from None


def _compare(built: Path, pinned: Path) -> list[str]:
    new, old = _manifest_at(built), _manifest_at(pinned)
    old_files = {f.path: f for f in old.files}
    problems = []
    for f in new.files:
        was = old_files.get(f.path)
        if was is None or was.sha256 != f.sha256:
            pinned_text = f"{was.sha256[:16]}... ({was.records} records)" if was else "nothing"
            problems.append(
                f"{f.path}: built {f.sha256[:16]}... ({f.records} records), pinned {pinned_text}"
            )
    if [s.model_dump() for s in new.sites] != [s.model_dump() for s in old.sites]:
        problems.append("the sites (hosts, sources, package versions) differ")
    return problems or ["manifest.json differs"]


def build_pack(
    pack_dir: Path,
    apps: Sequence[SiteApp],
    tasks: Sequence[ScoringTask],
    update_pin: bool = False,
    progress: Say | None = None,
    pin: Path | None = None,
) -> BuildResult:
    """Record the sites into ``pack_dir`` and check the result against the pinned manifest
    ``pin`` (default: ``pack_dir/manifest.json``, the committed one when building in place).

    A build that differs from the pin, or a missing pin, is an error unless ``update_pin``
    is set: then the pin file is (re)written with the new manifest.
    """
    sites = [site_info(app) for app in apps]
    pinned = pin if pin is not None else pack_dir / MANIFEST
    if pinned.is_dir():
        raise UserError(f"{pinned}: is a folder; the pin is a manifest.json file")
    if not pinned.is_file() and not update_pin:
        raise UserError(
            f"{pinned}: no pinned manifest to check the build against (give the committed "
            "one with --pin, or write a first pin on purpose with --update-pin)"
        )
    work = pack_dir.parent / f".{pack_dir.name}.build-{uuid.uuid4().hex[:8]}" / pack_dir.name
    work.mkdir(parents=True)
    counts: dict[str, int] = {}
    try:
        for app in apps:
            urls = site_urls(app, tasks)
            counts[app.model.name] = len(urls)
            if progress:
                progress(f"recording {app.model.name}: {len(urls)} states")
            _record_site(work, app, urls, sites)
        report = verify_pack(work)
        if not report.ok:
            raise UserError(f"the built pack does not verify: {report.problems[:3]}")
        built = (work / MANIFEST).read_bytes()
        new_pin = not pinned.is_file()
        repinned = False
        if not new_pin and pinned.read_bytes() != built:
            if not update_pin:
                problems = "\n  - ".join(_compare(work / MANIFEST, pinned))
                raise PinError(
                    f"{pack_dir}: the built pack differs from its pinned manifest {pinned}:\n  - "
                    f"{problems}\n(install the pinned package versions with `pip install -c "
                    "constraints.txt -e .[sites]`, or re-pin on purpose with --update-pin)"
                )
            repinned = True
        pack_dir.mkdir(parents=True, exist_ok=True)
        for stale in (pack_dir / WARC_DIR, pack_dir / CACHE_DIR):
            shutil.rmtree(stale, ignore_errors=True)
        shutil.move(str(work / WARC_DIR), str(pack_dir / WARC_DIR))
        (pack_dir / MANIFEST).write_bytes(built)
        if repinned or new_pin:
            pinned.parent.mkdir(parents=True, exist_ok=True)
            pinned.write_bytes(built)
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)
    manifest = load_manifest(pack_dir)
    return BuildResult(
        pack_dir, manifest_sha256(pack_dir), manifest.record_count, counts, repinned, new_pin
    )
