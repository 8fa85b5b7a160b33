"""The ``elements`` replica site: model, pages, HTTP handler, tasks and their reference answers."""

from __future__ import annotations

import http.client
import importlib.metadata
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit

import pytest

# mendeleev's own import pulls in pandas; the site only reads its database file.
if importlib.util.find_spec("mendeleev") is None:  # pragma: no cover - optional data package
    pytest.skip("the mendeleev package is not installed", allow_module_level=True)

from sgrgym.runs.loopback import serve_http
from sgrgym.sgr.score import score_answer
from sgrgym.sgr.sites.app import NotFound, SiteApp, load_site
from sgrgym.sgr.sites.model import Op, SiteError, SiteModel
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.sgr.sites.reference import Reference, answer_states, rows_as_answer, walk
from sgrgym.sgr.tasks import ScoringTask, load_tasks

TASK_DIR = Path(__file__).resolve().parent.parent / "tasks" / "sgr" / "elements"
TASK_FILES = [TASK_DIR / "constraint.jsonl", TASK_DIR / "goal.jsonl"]


@pytest.fixture(scope="module")
def app() -> SiteApp:
    return load_site("elements")


@pytest.fixture(scope="module")
def tasks() -> list[ScoringTask]:
    return load_tasks(TASK_FILES)


def _reference_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("elements_reference", TASK_DIR / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reference(task: ScoringTask) -> Reference:
    return Reference.model_validate((task.task.model_extra or {})["reference"])


def _results(page: bytes) -> list[dict[str, str]]:
    return extract_tables(page)["results"]


def test_model_validates_and_names_its_source(app: SiteApp) -> None:
    model = app.model
    assert SiteModel.model_validate(model.model_dump()) == model
    assert model.name == "elements"
    assert model.host == "elements.sgrgym.test"
    assert model.source == f"mendeleev {importlib.metadata.version('mendeleev')}"
    assert model.licence == "MIT"
    kinds = {c.kind for c in model.controls}
    assert {"hierarchy", "filter", "scope", "window", "sort", "page"} <= kinds


def test_default_page_is_the_block_overview(app: SiteApp) -> None:
    rows = _results(app.render(app.model.default_state()))
    assert [r["block"] for r in rows] == ["s", "p", "d", "f"]
    assert sum(int(r["element_count"]) for r in rows) == 118


def test_every_archived_state_renders_deterministically(app: SiteApp) -> None:
    model = app.model
    states = list(app.states())
    assert states[0] == model.default_state()
    assert len(states) == len(set(states)) and len(states) < 400
    for state in states:
        page = app.render(state)
        assert b'data-table="results"' in page
        assert model.parse_url(model.url(state)) == state
    sample = states[:: len(states) // 10]
    assert [app.render(s) for s in sample] == [app.render(s) for s in sample]


def test_pages_hold_at_most_twenty_rows_and_link_their_pager(app: SiteApp) -> None:
    model = app.model
    first = model.state("/isotopes", {"element": "Sn"})
    page = app.render(first)
    assert len(_results(page)) == 20
    second = model.apply(first, Op(op="page", control="page", value="2"))
    assert model.url(second).encode() in page.replace(b"&amp;", b"&")
    assert _results(app.render(second))[0]["isotope"] != _results(page)[0]["isotope"]
    with pytest.raises(NotFound):
        app.render(model.state("/isotopes", {"element": "Sn", "page": "9"}))


def test_filters_window_and_sort_change_the_rows(app: SiteApp) -> None:
    model = app.model
    rows = _results(app.render(model.state("/elements", {"group": "18", "period": "4"})))
    assert [r["symbol"] for r in rows] == ["Kr"]
    state = model.state(
        "/isotopes",
        {"element": "Fe", "kind": "stable", "sort": "abundance", "order": "desc"},
    )
    assert [r["isotope"] for r in _results(app.render(state))] == [
        "Fe-56", "Fe-54", "Fe-57", "Fe-58",
    ]  # fmt: skip
    window = model.state("/isotopes", {"element": "Fe", "from": "1930", "to": "1939"})
    years = {int(r["discovery_year"]) for r in _results(app.render(window))}
    assert years and all(1930 <= y <= 1939 for y in years)
    with pytest.raises(SiteError):
        app.render(model.state("/isotopes", {"from": "1950", "to": "1940"}))


def test_reference_script_matches_the_task_files() -> None:
    answers = _reference_module().answers()
    for path in TASK_FILES:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert {r["task_id"].removesuffix("-g"): r["oracle_answer"] for r in records} == answers


def test_task_set_shape(tasks: list[ScoringTask]) -> None:
    assert sorted(t.task_id for t in tasks) == sorted(
        [f"elements_{n:03d}{s}" for n in range(1, 5) for s in ("", "-g")]
    )
    references = [_reference(t) for t in tasks if t.variant == "CG"]
    assert all(2 <= t.task.oracle_output_cardinality <= 20 for t in tasks)
    assert any(op.type == "data" for r in references for op in r.path)
    assert any(
        len(r.answer.states) > 1 or any(op.op == "page" for op in r.path) for r in references
    )


def test_reference_paths_reproduce_every_answer(app: SiteApp, tasks: list[ScoringTask]) -> None:
    model = app.model
    for task in tasks:
        assert model.parse_url(task.task.start_url or "") == model.default_state()
        reference = _reference(task)
        assert reference.site == "elements"
        states = walk(model, reference.path)
        pages = [app.render(s) for s in answer_states(reference, states)]
        answer = rows_as_answer(
            pages, reference.answer.table, task.columns, task.field_sep, task.record_sep
        )
        score = score_answer(task, answer)
        assert (score.item_f1, score.row_f1, score.poa) == (1.0, 1.0, 1.0), task.task_id
        start = rows_as_answer(
            [app.render(states[0])], "results", task.columns, task.field_sep, task.record_sep
        )
        assert score_answer(task, start).item_f1 < 0.5, task.task_id


def _get(base: str, target: str) -> tuple[int, bytes]:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        conn.request("GET", target)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_http_handler_serves_proxy_and_origin_requests(app: SiteApp) -> None:
    model = app.model
    with serve_http(app.handler()) as base:
        status, body = _get(base, model.base + "/elements?series=halogens&sort=year")
        assert status == 200
        assert [r["symbol"] for r in _results(body)][:2] == ["Cl", "I"]
        status, body = _get(base, "/isotopes?element=Cl&from=1930&to=1949")
        assert status == 200
        assert body == app.render(model.state("/isotopes", {"element": "Cl", "from": "1930",
                                                            "to": "1949"}))  # fmt: skip
        assert _get(base, "/elements?group=99")[0] == 400
        assert _get(base, "/isotopes?order=sideways")[0] == 400
        assert _get(base, "/elements?page=99")[0] == 404
