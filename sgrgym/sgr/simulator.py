"""The state simulator: site operations -> canonical URL -> archived page, with a trajectory.

The simulator knows the site models of a pack. Each operation (``set_filter``,
``clear_filter``, ``select_view``, ``open_node``, ``set_scope``, ``set_window``, ``sort``,
``page``, or ``goto`` a URL) moves that site's current state; the state's canonical URL is
answered from the snapshot archive, never from the network. A state the archive does not
hold is a deterministic miss whose message names the state. Every step is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sgrgym.sgr.archive.replay import Response, Snapshot
from sgrgym.sgr.sites.model import Op, SiteError, SiteModel, State


@dataclass(frozen=True)
class StepResult:
    """What one operation did: the state reached (if any), its page, and how it matched."""

    site: str
    state: State | None
    url: str
    response: Response | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.response is not None and self.response.match != "miss" and not self.error

    @property
    def message(self) -> str:
        if self.error:
            return self.error
        if self.response is not None and self.response.match == "miss":
            described = self.state.describe() if self.state else self.url
            return f"state not in snapshot: {self.site} {described} ({self.url})"
        return ""


@dataclass
class TrajectoryStep:
    step: int
    tool: str
    args: dict[str, str]
    site: str = ""
    state: str = ""  # the canonical URL reached ("" when none)
    match: str = ""  # exact | rule | miss | error | ""
    bytes: int = 0
    dependency: str = ""  # control | data, for site operations
    note: str = ""


@dataclass
class Simulator:
    """Current state per site, answered from ``snapshot``; ``trajectory`` logs every step."""

    snapshot: Snapshot
    sites: dict[str, SiteModel]  # by name
    current: dict[str, State] = field(default_factory=dict)
    trajectory: list[TrajectoryStep] = field(default_factory=list)

    def site_of_url(self, url: str) -> SiteModel | None:
        host = urlsplit(url).netloc.lower()
        return next((m for m in self.sites.values() if m.host == host), None)

    def state_of(self, site: str) -> State:
        model = self.sites[site]
        return self.current.get(site) or model.default_state()

    def _log(
        self, tool: str, args: dict[str, str], result: StepResult, dependency: str = ""
    ) -> None:
        response = result.response
        match = "error" if result.error else (response.match if response else "")
        self.trajectory.append(
            TrajectoryStep(
                step=len(self.trajectory) + 1, tool=tool, args=args, site=result.site,
                state=result.url, match=match, bytes=len(response.body) if response else 0,
                dependency=dependency, note=result.message,
            )
        )  # fmt: skip

    def operate(self, site: str, op: Op) -> StepResult:
        """Apply ``op`` to ``site``'s current state and answer the new state from the archive."""
        args = {k: v for k, v in op.model_dump().items() if v and k != "type"}
        model = self.sites.get(site)
        if model is None:
            result = StepResult(site, None, "", None, f"no site {site!r} in this pack")
        else:
            try:
                state = model.apply(self.state_of(site), op)
            except SiteError as exc:
                result = StepResult(site, None, "", None, str(exc))
            else:
                url = model.url(state)
                response = self.snapshot.fetch(url)
                if response.match != "miss":
                    self.current[site] = state
                result = StepResult(site, state, url, response)
        self._log(op.op, {"site": site, **args}, result, op.type)
        return result

    def fetch(self, url: str, tool: str = "fetch") -> StepResult:
        """Fetch a URL; a page of a modelled site also becomes that site's current state."""
        model = self.site_of_url(url)
        state: State | None = None
        if model is not None:
            try:
                state = model.parse_url(url)
                url = model.url(state)
            except SiteError:
                state = None
        response = self.snapshot.fetch(url)
        if model is not None and state is not None and response.match != "miss":
            self.current[model.name] = state
        result = StepResult(model.name if model else "", state, url, response)
        self._log(tool, {"url": url}, result)
        return result

    def note(self, tool: str, args: dict[str, str], note: str = "") -> None:
        """Log a step that touches no state (search, answer)."""
        self.trajectory.append(
            TrajectoryStep(step=len(self.trajectory) + 1, tool=tool, args=args, note=note)
        )
