"""Declarative site models: a site's controls, its default state, and state <-> URL.

A *state* is a route (a path such as ``/elements``) plus the values of that route's
controls. Each control sets one or more URL query parameters; a parameter at its default
value is left out of the URL, so every state has exactly one canonical URL::

    http://elements.sgrgym.test/elements?group=18&sort=number&order=asc

Operations (SGR-Bench section 3.1: filters, views, hierarchy nodes, scopes, time windows,
sort, pages) change a state; each has a dependency type (``control`` or ``data``, as the
paper's task metadata distinguishes) recorded in reference paths and trajectories.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sgrgym.core.errors import UserError
from sgrgym.core.inputs import field_problem

ControlKind = Literal["filter", "view", "hierarchy", "scope", "window", "sort", "page"]
OpName = Literal[
    "set_filter",
    "clear_filter",
    "select_view",
    "open_node",
    "set_scope",
    "set_window",
    "sort",
    "page",
    "goto",
]
DependencyType = Literal["control", "data"]

# Which control kinds an operation may change.
OP_KINDS: dict[str, tuple[str, ...]] = {
    "set_filter": ("filter",),
    "clear_filter": ("filter", "hierarchy", "scope", "window"),
    "select_view": ("view",),
    "open_node": ("hierarchy",),
    "set_scope": ("scope",),
    "set_window": ("window",),
    "sort": ("sort",),
    "page": ("page",),
}


class SiteError(ValueError):
    """An operation or URL that the site model does not allow (message says why)."""


class NotFound(SiteError):
    """A valid state that has nothing to show (an unknown node, a page past the end): 404."""


class InvalidValue(SiteError):
    """A parameter or value the site does not offer (the site answers with its validation
    page); ``path`` and ``params`` are the request as made, so its URL can be written."""

    def __init__(self, message: str, path: str, params: Mapping[str, str]) -> None:
        super().__init__(message)
        self.path = path
        self.params = dict(params)


class Control(BaseModel):
    """One state mechanism of a route; ``params`` are the URL parameters it sets.

    A window sets two parameters (start, end); a sort sets (key, order); every other kind
    sets one. ``values`` restricts the first parameter's values (empty: any value).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: ControlKind
    params: tuple[str, ...]
    values: tuple[str, ...] = ()
    default: tuple[str, ...] = ()  # default value per param ("" = unset)
    label: str = ""

    @model_validator(mode="after")
    def _shape(self) -> Control:
        want = 2 if self.kind in ("window", "sort") else 1
        if len(self.params) != want:
            raise ValueError(f"control {self.name}: a {self.kind} sets {want} parameter(s)")
        if self.default and len(self.default) != want:
            raise ValueError(f"control {self.name}: one default per parameter")
        return self

    def default_of(self, param: str) -> str:
        if not self.default:
            return ""
        return self.default[self.params.index(param)]


class Route(BaseModel):
    """A page kind of the site (a path) and the controls it understands."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(pattern=r"^/[A-Za-z0-9/_.-]*$")
    title: str
    controls: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()  # names of the data tables its pages render


class State(BaseModel):
    """A route and its non-default parameter values."""

    model_config = ConfigDict(frozen=True)

    path: str
    params: tuple[tuple[str, str], ...] = ()  # sorted, defaults left out

    def get(self, param: str, default: str = "") -> str:
        return dict(self.params).get(param, default)

    def describe(self) -> str:
        settings = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.path}" + (f" [{settings}]" if settings else "")


class Op(BaseModel):
    """One operation on a site: ``op`` with its arguments, and its dependency type."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: OpName
    control: str = ""
    value: str = ""  # set_filter/open_node/set_scope/select_view/page; goto: a URL
    end: str = ""  # set_window: the window's end (value is its start); sort: the order
    type: DependencyType = "control"


class SiteModel(BaseModel):
    """A site: host, routes, controls, start page; turns operations into canonical URLs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    host: str  # a reserved name (``*.sgrgym.test``): pages are recorded through a loopback proxy
    start_path: str = "/"
    routes: tuple[Route, ...]
    controls: tuple[Control, ...] = ()
    source: str = ""  # where the data comes from (package and version)
    licence: str = ""
    # Routes whose default state a web search engine indexes (entry, about, help pages); the
    # start page always is. States with any non-default control are never indexed.
    indexable: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> SiteModel:
        names = {c.name for c in self.controls}
        for route in self.routes:
            missing = set(route.controls) - names
            if missing:
                raise ValueError(f"route {route.path}: unknown controls {sorted(missing)}")
        paths = {r.path for r in self.routes}
        if self.start_path not in paths:
            raise ValueError(f"start_path {self.start_path} is not a route")
        unknown = sorted(set(self.indexable) - paths)
        if unknown:
            raise ValueError(f"indexable routes {unknown} are not routes")
        return self

    # -- lookups ---------------------------------------------------------------------------
    @property
    def base(self) -> str:
        return f"http://{self.host}"

    def route(self, path: str) -> Route:
        for route in self.routes:
            if route.path == path:
                return route
        raise NotFound(f"{self.name}: no page {path!r}")

    def control(self, name: str) -> Control:
        for control in self.controls:
            if control.name == name:
                return control
        raise SiteError(f"{self.name}: no control {name!r}")

    def route_controls(self, path: str) -> list[Control]:
        return [self.control(n) for n in self.route(path).controls]

    # -- states and URLs -------------------------------------------------------------------
    def state(
        self, path: str, params: Mapping[str, str] | None = None, *, strict: bool = True
    ) -> State:
        """A validated state: a value a control does not offer is an InvalidValue.

        A parameter no control of the route reads is an error too, unless ``strict`` is false:
        then it is ignored, as most real sites ignore what they do not know (``parse_url``,
        what an address typed by hand gets). The message never lists the values a site
        offers: its pages show them (links, forms), its error pages do not.
        """
        controls = self.route_controls(path)
        by_param = {p: c for c in controls for p in c.params}
        kept: dict[str, str] = {}
        for param, value in (params or {}).items():
            control = by_param.get(param)
            if control is None:
                if not strict:
                    continue
                raise InvalidValue(f"{self.name}{path}: no parameter {param!r}", path, params or {})
            if value == "" or value == control.default_of(param):
                continue
            if control.values and param == control.params[0] and value not in control.values:
                raise InvalidValue(
                    f"{self.name}{path}: {control.name}={value!r} is not offered",
                    path,
                    params or {},
                )
            kept[param] = value
        return State(path=path, params=tuple(sorted(kept.items())))

    def default_state(self) -> State:
        return self.state(self.start_path)

    def indexable_states(self) -> list[State]:
        """The states a web search engine indexes: the start page, then declared routes."""
        paths = dict.fromkeys((self.start_path, *self.indexable))
        return [self.state(path) for path in paths]

    def url(self, state: State) -> str:
        query = urlencode(state.params)
        return f"{self.base}{state.path}" + (f"?{query}" if query else "")

    def parse_url(self, url: str) -> State:
        """The state a URL of this site denotes (SiteError for other hosts or bad values)."""
        parts = urlsplit(url)
        if parts.netloc.lower() != self.host:
            raise SiteError(f"{url}: not a page of {self.name} ({self.host})")
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        return self.state(parts.path or "/", params, strict=False)

    # -- operations ------------------------------------------------------------------------
    def apply(self, state: State, op: Op) -> State:
        """The state reached from ``state`` by ``op`` (SiteError when the site has no such op)."""
        if op.op == "goto":
            return self.parse_url(op.value)
        if op.op == "select_view" and not op.control:
            return self.state(op.value)  # a view that is its own page
        control = self.control(op.control)
        if control.kind not in OP_KINDS[op.op]:
            raise SiteError(f"{op.op} cannot change {control.kind} control {control.name!r}")
        if control.name not in self.route(state.path).controls:
            raise SiteError(f"{self.name}{state.path}: this page has no {control.name!r} control")
        params = dict(state.params)
        if op.op == "clear_filter":
            for param in control.params:
                params.pop(param, None)
        elif control.kind in ("window", "sort"):
            params[control.params[0]] = op.value
            params[control.params[1]] = op.end
        else:
            params[control.params[0]] = op.value
        if op.op != "page":  # a new selection starts again at the first page
            for other in self.route_controls(state.path):
                if other.kind == "page":
                    params.pop(other.params[0], None)
        return self.state(state.path, params)


def site_models(
    entries: Iterable[BaseModel], manifest: str = "the pack manifest"
) -> dict[str, SiteModel]:
    """The site models stored in a pack manifest's ``sites`` entries (key ``model``), by name.

    A model that does not validate is a UserError naming ``manifest`` and the site entry.
    """
    models = {}
    for number, entry in enumerate(entries):
        raw = (entry.model_extra or {}).get("model")
        if raw is None:
            continue
        try:
            model = SiteModel.model_validate(raw)
        except (ValidationError, SiteError) as exc:
            why = field_problem(exc) if isinstance(exc, ValidationError) else str(exc)
            raise UserError(
                f"{manifest}: sites[{number}].model is not a valid site model ({why}); the "
                "manifest was edited: rebuild the pack with `sgrgym sgr build-packs`"
            ) from None
        models[model.name] = model
    return models
