"""Rendering any state of a replica site, for packs whose sites are replica apps.

A pack built from the replica sites (``sgr build-packs``) archives only some states, but the
sites are pinned Python apps over pinned data: the same function that produced the archived
pages can produce every other state the site model expresses. :class:`SiteRenderer` holds
those apps for a pack. It refuses an installed app whose site entry (model, data package and
version, licence) differs from the one in the pack's manifest, or whose start page does not
come out byte for byte as archived (the site code changed since the pack was built).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pydantic import BaseModel

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.version import __version__
from sgrgym.sgr.sites.app import SITES, SiteApp, load_site
from sgrgym.sgr.sites.build import site_info
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
    """The replica apps of a pack's sites, checked against its manifest, by site name."""

    apps: dict[str, SiteApp]

    def handles(self, site: str) -> bool:
        return site in self.apps

    def respond(self, site: str, url: str) -> tuple[int, str, bytes]:
        """(status, content type, body) of ``url`` as the site's app answers it."""
        return self.apps[site].respond(url)

    def card(self) -> dict[str, RenderedSite]:
        """The app version and the sha256 of every data file each site reads."""
        out = {}
        for name, app in sorted(self.apps.items()):
            files = {path.name: sha256_file(path)[0] for path in app.data_files()}
            out[name] = RenderedSite(
                app=f"sgrgym {__version__}", source=app.model.source, data_files=files
            )
        return out


def _check(snapshot: Snapshot, app: SiteApp, entry: BaseModel) -> None:
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
    answered as a web server would). A registered app whose package is missing is an error.
    """
    given = {app.model.name: app for app in apps}
    chosen: dict[str, SiteApp] = {}
    for entry in snapshot.manifest.sites:
        raw = (entry.model_extra or {}).get("model")
        name = raw.get("name") if isinstance(raw, Mapping) else None
        if not isinstance(name, str):
            continue
        app = given.get(name) or (load_site(name) if name in SITES else None)
        if app is None:
            continue
        _check(snapshot, app, entry)
        chosen[name] = app
    return SiteRenderer(chosen)
