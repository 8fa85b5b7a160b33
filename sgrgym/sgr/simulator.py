"""The state simulator: site operations -> canonical URL -> page, with a trajectory.

The simulator knows the site models of a pack. Each operation (``set_filter``,
``clear_filter``, ``select_view``, ``open_node``, ``set_scope``, ``set_window``, ``sort``,
``page``, or ``goto`` a URL) moves that site's current state; the state's canonical URL is
answered from the snapshot archive (``exact`` / ``rule``), never from the network. A state the
archive lacks is rendered by the site's app when the pack has a renderer (``rendered``: the
same function that produced the archived pages), so every state the site model expresses is
reachable: a valid state with nothing to show gets the site's own 404 page, a value the site
does not offer its one "no results" page, and a parameter it does not read is ignored.
Without a renderer a miss is answered as a web server would answer an unknown address: the
archived 404 page of that host when the pack holds one, else a plain 404 (``miss``). Nothing
the agent sees tells archived and rendered pages apart; the trajectory records which it was
for the researcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from sgrgym.sgr.render import SiteRenderer
from sgrgym.sgr.sites.model import InvalidValue, Op, SiteError, SiteModel, State
from sgrgym.snapshot.replay import Snapshot

PLAIN_404 = b"404 Not Found\n\nThe requested address was not found on this server.\n"
PLAIN = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Served:
    """A page as the agent receives it, and (for the trajectory only) where it came from."""

    url: str
    status: int
    content_type: str
    body: bytes
    match: str  # exact | rule | rendered | miss


@dataclass(frozen=True)
class Transition:
    """What one operation did: the state reached (if any), its page, or a tool error."""

    site: str
    state: State | None
    url: str
    served: Served | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.served is not None and self.served.status == 200 and not self.error


@dataclass
class TrajectoryStep:
    step: int
    tool: str
    args: dict[str, str]
    site: str = ""
    state: str = ""  # the canonical URL reached ("" when none)
    match: str = ""  # exact | rule | rendered | miss | error | ""
    status: int = 0  # HTTP status of the page answered (0: none)
    bytes: int = 0
    dependency: str = ""  # control | data, for site operations
    note: str = ""


@dataclass
class Simulator:
    """Current state per site, answered from ``snapshot`` (and ``renderer``); ``trajectory``
    logs every step."""

    snapshot: Snapshot
    sites: dict[str, SiteModel]  # by name
    renderer: SiteRenderer | None = None
    current: dict[str, State] = field(default_factory=dict)
    trajectory: list[TrajectoryStep] = field(default_factory=list)
    _not_found: dict[str, Served | None] = field(default_factory=dict)

    def site_of_url(self, url: str) -> SiteModel | None:
        host = urlsplit(url).netloc.lower()
        return next((m for m in self.sites.values() if m.host == host), None)

    def state_of(self, site: str) -> State:
        model = self.sites[site]
        return self.current.get(site) or model.default_state()

    # -- answering a URL -------------------------------------------------------------------
    def serve(self, url: str, site: str = "") -> Served:
        """The page at ``url``: archived, else rendered by the site's app, else a 404."""
        response = self.snapshot.fetch(url)
        if response.match != "miss":
            return Served(
                response.url,
                response.status,
                response.content_type,
                response.body,
                response.match,
            )
        if site and self.renderer is not None and self.renderer.handles(site):
            status, content_type, body = self.renderer.respond(site, url)
            return Served(url, status, content_type, body, "rendered")
        return self._miss(url)

    def _miss(self, url: str) -> Served:
        host = urlsplit(url).netloc.lower()
        if host not in self._not_found:
            self._not_found[host] = self._archived_404(host)
        page = self._not_found[host]
        if page is None:
            return Served(url, 404, PLAIN, PLAIN_404, "miss")
        return Served(url, 404, page.content_type, page.body, "miss")

    def _archived_404(self, host: str) -> Served | None:
        """The first archived 404 page of ``host`` (by URL), the site's own "not found"."""
        for url in self.snapshot.urls():
            if urlsplit(url).netloc.lower() != host:
                continue
            capture, _ = self.snapshot.lookup(url)
            if capture is not None and capture.status == 404:
                response = self.snapshot.fetch(url)
                return Served(url, 404, response.content_type, response.body, "exact")
        return None

    # -- steps -----------------------------------------------------------------------------
    def _log(
        self, tool: str, args: dict[str, str], result: Transition, dependency: str = ""
    ) -> None:
        served = result.served
        match = "error" if result.error else (served.match if served else "")
        self.trajectory.append(
            TrajectoryStep(
                step=len(self.trajectory) + 1,
                tool=tool,
                args=args,
                site=result.site,
                state=result.url,
                match=match,
                status=served.status if served else 0,
                bytes=len(served.body) if served else 0,
                dependency=dependency,
                note=result.error,
            )
        )

    def _invalid(self, model: SiteModel, exc: InvalidValue) -> Transition:
        """A request with a value the site does not offer: the site's validation page."""
        query = urlencode(sorted((k, v) for k, v in exc.params.items() if v))
        url = f"{model.base}{exc.path}" + (f"?{query}" if query else "")
        if self.renderer is not None and self.renderer.handles(model.name):
            return Transition(model.name, None, url, self.serve(url, model.name))
        return Transition(model.name, None, url, None, str(exc))

    def operate(self, site: str, op: Op) -> Transition:
        """Apply ``op`` to ``site``'s current state and answer the new state's page."""
        args = {k: v for k, v in op.model_dump().items() if v and k != "type"}
        model = self.sites.get(site)
        if model is None:
            result = Transition(site, None, "", None, f"no site {site!r} in this pack")
        else:
            try:
                state = model.apply(self.state_of(site), op)
            except InvalidValue as exc:
                result = self._invalid(model, exc)
            except SiteError as exc:
                result = Transition(site, None, "", None, str(exc))
            else:
                url = model.url(state)
                served = self.serve(url, site)
                if served.status == 200:
                    self.current[site] = state
                result = Transition(site, state, url, served)
        self._log(op.op, {"site": site, **args}, result, op.type)
        return result

    def fetch(self, url: str, tool: str = "fetch") -> Transition:
        """Fetch a URL; a page of a modelled site also becomes that site's current state (the
        state the URL denotes: parameters the site does not read are ignored, so the step's
        ``state`` is the canonical URL while its ``args`` keep the address as requested). A
        text that is not a URL is a tool error (logged as a step like any other)."""
        try:
            urlsplit(url)
        except ValueError as exc:
            result = Transition("", None, url, None, f"not a valid URL ({exc})")
            self._log(tool, {"url": url}, result)
            return result
        requested = url
        model = self.site_of_url(url)
        state: State | None = None
        if model is not None:
            try:
                state = model.parse_url(url)
                url = model.url(state)
            except SiteError:
                state = None
        served = self.serve(url, model.name if model else "")
        if model is not None and state is not None and served.status == 200:
            self.current[model.name] = state
        result = Transition(model.name if model else "", state, url, served)
        self._log(tool, {"url": requested}, result)
        return result

    def note(self, tool: str, args: dict[str, str], note: str = "") -> None:
        """Log a step that touches no state (search, answer)."""
        self.trajectory.append(
            TrajectoryStep(step=len(self.trajectory) + 1, tool=tool, args=args, note=note)
        )
