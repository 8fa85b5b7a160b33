"""A tiny replica site (made-up data) to test site models, packs, the simulator and agents."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sgrgym.sgr.sites.app import NotFound, SiteApp
from sgrgym.sgr.sites.model import Control, Route, SiteModel, State
from sgrgym.sgr.sites.page import Choice, ControlLinks, Table, render_page

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

    def render(self, state: State) -> bytes:
        if state.path == "/":
            return render_page(
                MODEL, state, "Toy Plant Register", "A register of six plants.",
                tables=[Table("results", [("name", "Name")], [{"name": "(choose a kind)"}])],
                controls=[ControlLinks("Browse", [Choice("plants", MODEL.state("/plants"))])],
            )  # fmt: skip
        rows = [r for r in ROWS if state.get("kind") in ("", r["kind"])]
        rows = [r for r in rows if state.get("zone") in ("", r["zone"])]
        key = state.get("sort", "name")
        rows.sort(key=lambda r: (int(r[key]) if key == "height" else r[key], r["name"]))
        if state.get("order", "asc") == "desc":
            rows.reverse()
        page = int(state.get("page", "1"))
        pages = max(1, -(-len(rows) // PAGE_SIZE))
        if not 1 <= page <= pages:
            raise NotFound(f"page {page} of {pages}")
        shown = rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        params = dict(state.params)
        return render_page(
            MODEL, state, "Plants", "Plants of the register.",
            tables=[Table("results", [("name", "Name"), ("kind", "Kind"), ("height", "Height")],
                          shown)],
            controls=[ControlLinks("Kind", [Choice(k, MODEL.state("/plants", {"kind": k}))
                                            for k in ("tree", "shrub", "herb")])],
            pager=[Choice(str(n), MODEL.state("/plants", {**params, "page": str(n)}), n == page)
                   for n in range(1, pages + 1)],
        )  # fmt: skip

    def states(self) -> Iterable[State]:
        yield MODEL.state("/")
        yield MODEL.state("/plants")
        for kind in ("tree", "shrub", "herb"):
            yield MODEL.state("/plants", {"kind": kind})


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
