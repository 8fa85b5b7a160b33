"""Rendering any state of a replica site, for packs whose sites are replica apps.

A pack built from the replica sites (``sgr build-packs``) archives only some states, but the
sites are pinned Python apps over pinned data: the same function that produced the archived
pages can produce every other state the site model expresses. :class:`SiteRenderer` holds
those apps for a pack. It refuses an installed app whose site entry (model, data package and
version, licence) differs from the one in the pack's manifest, or whose start page does not
come out byte for byte as archived (the site code changed since the pack was built).

An app is loaded (its data parsed) and checked when a page of its site is first rendered, not
before: a run pays only for the sites it renders, and nothing is ever served by an app that
was not checked. The run card's description of each site (:meth:`SiteRenderer.card`) needs no
app: the data files are located without being read.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.version import __version__
from sgrgym.sgr.sites.app import SITES, SiteApp, load_site, site_data_files
from sgrgym.snapshot.pack import SiteInfo
from sgrgym.snapshot.replay import Snapshot

REBUILD_HINT = (
    'install the versions the pack was built with (pip install -c constraints.txt -e ".[sites]"), '
    "rebuild the pack (sgrgym sgr build-packs), or run without rendering (--no-render)"
)


class RenderedSite(BaseModel):
    """What a run card records about a site rendered by an app."""

    app: str  # the package and version whose code renders the site
    source: str  # the data package and version (the site model's source)
    data_files: dict[str, str]  # data file name -> sha256


@dataclass
class SiteRenderer:
    """The replica apps of a pack's sites, by site name: each loaded and checked against the
    pack's manifest when its site is first rendered (:meth:`app`)."""

    snapshot: Snapshot
    entries: dict[str, SiteInfo]  # site -> its entry in the pack's manifest
    _apps: dict[str, SiteApp] = field(default_factory=dict, init=False)  # loaded and checked
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def handles(self, site: str) -> bool:
        return site in self.entries

    def loaded(self) -> list[str]:
        """The sites whose app is loaded (and checked), by name."""
        return sorted(self._apps)

    def app(self, site: str) -> SiteApp:
        """The site's app, loaded and checked on first use (a UserError if it is not the one
        the pack was built with); every later call returns the same app."""
        app = self._apps.get(site)
        if app is None:
            with self._lock:  # parallel episodes load an app once
                app = self._apps.get(site)
                if app is None:
                    app = load_site(site)
                    _check(self.snapshot, app, self.entries[site])
                    self._apps[site] = app
        return app

    def load_all(self) -> None:
        """Load and check every site's app now (a UserError for the first, in site order, that
        is not the one the pack was built with)."""
        for site in sorted(self.entries):
            self.app(site)

    def respond(self, site: str, url: str) -> tuple[int, str, bytes]:
        """(status, content type, body) of ``url`` as the site's app answers it."""
        return self.app(site).respond(url)

    def card(self) -> dict[str, RenderedSite]:
        """The app version, the data source and the sha256 of every data file each site reads.

        No app is loaded for it: the source is the site model's, as the pack's manifest holds
        it (an app is only used once its model, source included, is found identical), and the
        data files are located without being read."""
        out = {}
        for name in sorted(self.entries):
            app = self._apps.get(name)
            paths = app.data_files() if app is not None else site_data_files(name)
            files = {path.name: sha256_file(path)[0] for path in paths}
            out[name] = RenderedSite(
                app=f"sgrgym {__version__}", source=_source(self.entries[name]), data_files=files
            )
        return out


def _model(entry: BaseModel) -> Mapping[str, object]:
    """The site model of a manifest entry, as stored (empty when it holds none)."""
    raw = (entry.model_extra or {}).get("model")
    return raw if isinstance(raw, Mapping) else {}


def _source(entry: BaseModel) -> str:
    source = _model(entry).get("source")
    return source if isinstance(source, str) else ""


def _check(snapshot: Snapshot, app: SiteApp, entry: BaseModel) -> None:
    from sgrgym.sgr.sites.build import site_info  # with the pack recorder: only to check apps

    name = app.model.name
    where = f"pack {snapshot.manifest.pack} ({snapshot.pack_dir / 'manifest.json'})"
    built, installed = entry.model_dump(), site_info(app).model_dump()
    if built != installed:
        fields = [
            k for k in sorted(set(built) | set(installed)) if built.get(k) != installed.get(k)
        ]
        detail = (
            "; ".join(
                f"{k}: pack {built.get(k)!r}, installed {installed.get(k)!r}"
                for k in fields
                if k != "model"
            )
            or "the site model (routes, controls or values) differs"
        )
        raise UserError(
            f"{where}: site {name}: the installed site app is not the one "
            f"the pack was built with ({detail}); {REBUILD_HINT}"
        )
    start = app.model.url(app.model.default_state())
    archived = snapshot.fetch(start)
    if archived.match == "miss" or app.respond(start)[2] != archived.body:
        raise UserError(
            f"{where}: site {name}: the installed app renders {start} "
            f"differently from the archived page (the site code changed); {REBUILD_HINT}"
        )


def load_renderer(snapshot: Snapshot, apps: Iterable[SiteApp] = ()) -> SiteRenderer:
    """A renderer for the pack's sites that are replica apps (``apps``, else the registry).

    Sites of the pack that are neither given nor registered get no renderer (a miss there is
    answered as a web server would). A registered app is loaded and checked when its site is
    first rendered (a missing package is an error then, or when the run card is made); an app
    given here is already loaded, so it is checked here.
    """
    given = {app.model.name: app for app in apps}
    renderer = SiteRenderer(snapshot, {})
    for entry in snapshot.manifest.sites:
        name = _model(entry).get("name")
        if not isinstance(name, str) or (name not in given and name not in SITES):
            continue
        renderer.entries[name] = entry
        if name in given:
            _check(snapshot, given[name], entry)
            renderer._apps[name] = given[name]
    return renderer
