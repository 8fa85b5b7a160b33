"""A tiny replica site (made-up data) to test site models, packs, the simulator and agents."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sgrgym.sgr.sites.app import SiteApp
from sgrgym.sgr.sites.model import Control, Route, SiteModel, State
from sgrgym.sgr.sites.page import (
    Choice,
    ControlLinks,
    Table,
    descending,
    pager,
    paginate,
    render_page,
    sort_rows,
)

ROWS = [
    {"name": "alder", "kind": "tree", "height": "20", "zone": "north"},
    {"name": "birch", "kind": "tree", "height": "25", "zone": "north"},
    {"name": "cedar", "kind": "tree", "height": "40", "zone": "south"},
    {"name": "dogwood", "kind": "shrub", "height": "6", "zone": "south"},
    {"name": "elder", "kind": "shrub", "height": "4", "zone": "north"},
    {"name": "fern", "kind": "herb", "height": "1", "zone": "south"},
]
MODEL = SiteModel(
    name="toy",
    title="Toy Plant Register",
    host="toy.sgrgym.test",
    start_path="/",
    routes=(
        Route(path="/", title="Home"),
        Route(
            path="/plants",
            title="Plants",
            controls=("kind", "zone", "sort", "page"),
            tables=("results",),
        ),
    ),
    controls=(
        Control(name="kind", kind="filter", params=("kind",), values=("tree", "shrub", "herb")),
        Control(name="zone", kind="scope", params=("zone",), values=("north", "south")),
        Control(
            name="sort",
            kind="sort",
            params=("sort", "order"),
            values=("name", "height"),
            default=("name", "asc"),
        ),
        Control(name="page", kind="page", params=("page",), default=("1",)),
    ),
    source="made up for tests",
    licence="CC0-1.0",
)
PAGE_SIZE = 2


class ToySite(SiteApp):
    model = MODEL

    def pages(self) -> dict[str, Callable[[State], bytes]]:
        return {"/": self._home, "/plants": self._plants}

    def _home(self, state: State) -> bytes:
        return render_page(
            MODEL,
            state,
            "Toy Plant Register",
            "A register of six plants.",
            tables=[Table("results", [("name", "Name")], [{"name": "(choose a kind)"}])],
            controls=[ControlLinks("Browse", [Choice("plants", MODEL.state("/plants"))])],
        )

    def _plants(self, state: State) -> bytes:
        rows = [r for r in ROWS if state.get("kind") in ("", r["kind"])]
        rows = [r for r in rows if state.get("zone") in ("", r["zone"])]
        key = state.get("sort", "name")
        rows = sort_rows(
            rows,
            lambda r: int(r[key]) if key == "height" else r[key],
            lambda r: r["name"],
            descending(state),
        )
        shown, page, pages = paginate(rows, state, PAGE_SIZE)
        kinds = [Choice(k, MODEL.state("/plants", {"kind": k})) for k in ("tree", "shrub", "herb")]
        columns = [("name", "Name"), ("kind", "Kind"), ("height", "Height")]
        return render_page(
            MODEL,
            state,
            "Plants",
            "Plants of the register.",
            tables=[Table("results", columns, shown)],
            controls=[ControlLinks("Kind", kinds)],
            pager=pager(MODEL, state, page, pages),
        )

    def states(self) -> Iterable[State]:
        yield MODEL.state("/")
        yield MODEL.state("/plants")
        for kind in ("tree", "shrub", "herb"):
            yield MODEL.state("/plants", {"kind": kind})


def make_app() -> ToySite:
    """The toy site as the replica-site registry loads a site (``SITES``: ``toy_site``)."""
    return ToySite()


class ChangedHome(ToySite):
    """The toy site after a code change: its start page no longer comes out as archived."""

    def _home(self, state: State) -> bytes:
        return super()._home(state).replace(b"six plants", b"seven plants")


def changed_home() -> ToySite:
    return ChangedHome()


def changed_source() -> ToySite:
    """The toy site over other data: its model names another source."""
    app = ToySite()
    app.model = MODEL.model_copy(update={"source": "made up, version 2"})
    return app


def toy_task(
    task_id: str, answer: str, path: list[dict[str, Any]], **answer_spec: Any
) -> dict[str, Any]:
    rows = answer.split("\n")
    return {
        "task_id": task_id,
        "domain": "TOY_REGISTER",
        "autonomy_type": "ordered table",
        "oracle_output_cardinality": len(rows),
        "instruction": f"List the plants asked for in {task_id}.",
        "output_format": "name|kind|height",
        "start_url": "http://toy.sgrgym.test/",
        "oracle_answer": answer,
        "metadata": {"dependency_type": "Control"},
        "rubric": {
            "columns": ["name", "kind", "height"],
            "row_key": ["name"],
            "fields": {"height": {"type": "integer"}},
        },
        "reference": {"site": "toy", "path": path, "answer": answer_spec or {"states": [-1]}},
    }


TREES_BY_HEIGHT = toy_task(
    "toy_001",
    "cedar|tree|40\nbirch|tree|25\nalder|tree|20",
    [
        {"op": "select_view", "value": "/plants"},
        {"op": "set_filter", "control": "kind", "value": "tree"},
        {"op": "sort", "control": "sort", "value": "height", "end": "desc"},
        {"op": "page", "control": "page", "value": "2"},
    ],
    states=[-2, -1],
)
SOUTH_TWO_PAGES = toy_task(
    "toy_002",
    "cedar|tree|40\ndogwood|shrub|6\nfern|herb|1",
    [
        {"op": "select_view", "value": "/plants"},
        {"op": "set_scope", "control": "zone", "value": "south"},
        {"op": "page", "control": "page", "value": "2", "type": "data"},
    ],
    states=[2, 3],
)
