"""The cwe replica site: model, pages, HTTP handler, tasks and their reference answers."""

from __future__ import annotations

import http.client
import importlib.util
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit

import pytest

from sgrgym.runs.loopback import serve_http
from sgrgym.sgr.score import score_answer
from sgrgym.sgr.sites.app import NotFound, SiteApp, load_site
from sgrgym.sgr.sites.model import SiteError, SiteModel
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.sgr.sites.reference import Reference, rows_as_answer, walk
from sgrgym.sgr.tasks import ScoringTask, load_tasks

pytest.importorskip("cwe2")

TASK_DIR = Path(__file__).resolve().parent.parent / "tasks" / "sgr" / "cwe"


@pytest.fixture(scope="module")
def app() -> SiteApp:
    return load_site("cwe")


@pytest.fixture(scope="module")
def tasks() -> list[ScoringTask]:
    return load_tasks([TASK_DIR / "constraint.jsonl", TASK_DIR / "goal.jsonl"])


def reference_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cwe_reference", TASK_DIR / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference(task: ScoringTask) -> Reference:
    return Reference.model_validate((task.task.model_extra or {})["reference"])


def answer_pages(app: SiteApp, task: ScoringTask) -> list[bytes]:
    ref = reference(task)
    states = walk(app.model, ref.path)
    return [app.render(states[i]) for i in ref.answer.states]


def test_model_validates(app: SiteApp) -> None:
    model = SiteModel.model_validate(app.model.model_dump())
    assert model.host == "cwe.sgrgym.test"
    assert model.source.startswith("cwe2 ")
    assert "MIT" in model.licence and "Terms of Use" in model.licence
    assert model.default_state().path == "/"


def test_default_page_has_results(app: SiteApp) -> None:
    tables = extract_tables(app.render(app.model.default_state()))
    assert tables["results"]
    assert {"facet", "value", "entries"} <= set(tables["results"][0])


def test_every_state_renders_and_round_trips(app: SiteApp) -> None:
    states = list(app.states())
    assert 50 < len(states) <= 400
    assert len(set(states)) == len(states)
    for route in app.model.routes:
        assert app.model.state(route.path) in states
    for state in states:
        page = app.render(state)
        assert "results" in extract_tables(page), state.describe()
        assert app.model.parse_url(app.model.url(state)) == state
    first = states[10]
    assert app.render(first) == app.render(first)


def test_bad_states(app: SiteApp) -> None:
    model = app.model
    with pytest.raises(NotFound):
        app.render(model.state("/weaknesses", {"page": "999"}))
    with pytest.raises(SiteError):
        app.render(model.state("/weaknesses", {"from": "2023", "to": "2021"}))
    with pytest.raises(SiteError):
        app.render(model.state("/weaknesses", {"sort": "name", "order": "sideways"}))
    with pytest.raises(SiteError):
        model.state("/hierarchy", {"id": "137"})  # a category, not a weakness


def test_reference_answers_match_task_files(tasks: list[ScoringTask]) -> None:
    computed = reference_module().answers()
    cg = {t.task_id: t.task.oracle_answer for t in tasks if t.variant == "CG"}
    assert computed == cg
    go = {t.task.pair_id: t.task.oracle_answer for t in tasks if t.variant == "GO"}
    assert go == cg


def test_task_set_shape(tasks: list[ScoringTask]) -> None:
    assert sorted(t.task_id for t in tasks) == sorted(
        [f"cwe_00{i}" for i in range(1, 5)] + [f"cwe_00{i}-g" for i in range(1, 5)]
    )
    assert all(2 <= len(t.gold_rows) <= 20 for t in tasks)
    assert any(op.type == "data" for t in tasks for op in reference(t).path)
    assert any(
        len(reference(t).answer.states) > 1 or any(op.op == "page" for op in reference(t).path)
        for t in tasks
    )


def test_reference_paths_give_the_oracle_answer(app: SiteApp, tasks: list[ScoringTask]) -> None:
    default_page = app.render(app.model.default_state())
    for task in tasks:
        ref = reference(task)
        assert ref.site == "cwe"
        states = walk(app.model, ref.path)
        assert all(states[i] != app.model.default_state() for i in ref.answer.states)
        text = rows_as_answer(
            answer_pages(app, task),
            ref.answer.table,
            task.columns,
            task.field_sep,
            task.record_sep,
        )
        score = score_answer(task, text)
        assert (score.item_f1, score.row_f1, score.poa) == (1.0, 1.0, 1.0), task.task_id
        alone = rows_as_answer([default_page], "results", task.columns)
        assert score_answer(task, alone).item_f1 < 0.5, task.task_id


def _get(base: str, target: str) -> tuple[int, bytes]:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        conn.request("GET", target)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_http_handler(app: SiteApp) -> None:
    model = app.model
    with serve_http(app.handler()) as base:
        status, body = _get(base, model.base + "/views?view=1425")
        assert status == 200
        assert extract_tables(body)["results"][2]["cwe_id"] == "CWE-89"
        status, body = _get(base, "/hierarchy")
        assert status == 200
        assert len(extract_tables(body)["results"]) == 10
        status, _ = _get(base, "/weaknesses?status=Bogus")
        assert status == 400
        status, _ = _get(base, "/views?view=1425&page=3")
        assert status == 404
