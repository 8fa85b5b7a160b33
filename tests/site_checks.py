"""Checks shared by the replica-site tests: task files, reference scripts and reference paths.

Each replica site ``<site>`` ships ``tasks/sgr/<site>/`` with ``constraint.jsonl`` (the CG
variants), ``goal.jsonl`` (the GO variants, ids ending in ``-g``) and ``reference.py`` (a
script whose ``answers()`` recomputes every oracle answer from the site's source data). The
functions here assert what holds for every such site. A site's test module gets its ``app``
and ``tasks`` fixtures from :func:`site_fixtures` and runs the checks by subclassing
:class:`SiteTaskChecks`::

    app, tasks = site_fixtures("cwe")


    class TestCweTasks(SiteTaskChecks):
        site = "cwe"
"""

from __future__ import annotations

import http.client
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import ClassVar
from urllib.parse import urlsplit

import pytest

from sgrgym.sgr.score import score_answer
from sgrgym.sgr.sites.app import SiteApp, load_site
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.sgr.sites.reference import Reference, answer_states, reference_of, rows_as_answer, walk
from sgrgym.sgr.tasks import ScoringTask, load_tasks

TASKS_ROOT = Path(__file__).resolve().parent.parent / "tasks" / "sgr"
PAIRS = 4
"""How many CG/GO task pairs each site ships."""


def task_dir(site: str) -> Path:
    """The folder holding ``site``'s task files and reference script."""
    return TASKS_ROOT / site


def task_files(site: str) -> list[Path]:
    """``site``'s task files: the constraint-guided file, then the goal-oriented one."""
    return [task_dir(site) / "constraint.jsonl", task_dir(site) / "goal.jsonl"]


def site_tasks(site: str) -> list[ScoringTask]:
    """Every task of ``site``, loaded from its task files."""
    return load_tasks(task_files(site))


def site_fixtures(site: str) -> tuple[object, object]:
    """Module-scoped ``app`` (the site, loaded) and ``tasks`` (its tasks) fixtures for ``site``;
    bind them in a test module as ``app, tasks = site_fixtures(site)``."""

    @pytest.fixture(scope="module", name="app")
    def app_fixture() -> SiteApp:
        return load_site(site)

    @pytest.fixture(scope="module", name="tasks")
    def tasks_fixture() -> list[ScoringTask]:
        return site_tasks(site)

    return app_fixture, tasks_fixture


def pair_ids(site: str) -> list[str]:
    """The pair ids (= CG task ids) a site's task set must have: ``<site>_001`` and up."""
    return [f"{site}_{n:03d}" for n in range(1, PAIRS + 1)]


def reference_module(site: str) -> ModuleType:
    """``tasks/sgr/<site>/reference.py``, imported as a fresh module."""
    spec = importlib.util.spec_from_file_location(
        f"{site}_reference", task_dir(site) / "reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference(task: ScoringTask) -> Reference:
    """The task's ``reference`` object; failing when the task has none."""
    ref = reference_of(task)
    assert ref is not None, f"task {task.task_id} has no reference"
    return ref


def answer_pages(app: SiteApp, task: ScoringTask) -> list[bytes]:
    """The pages the task's reference path names as holding its answer, in answer order."""
    ref = reference(task)
    return [app.render(s) for s in answer_states(ref, walk(app.model, ref.path))]


def check_reference_path(app: SiteApp, task: ScoringTask) -> None:
    """The reference path of ``task`` starts at the task's start URL (the default state) and
    gives a perfect score; the default page alone scores below 0.5 and shows no gold row."""
    model = app.model
    default = model.default_state()
    assert task.task.start_url == model.url(default), task.task_id
    assert model.parse_url(task.task.start_url or "") == default, task.task_id
    ref = reference(task)
    assert ref.site == model.name, task.task_id
    states = walk(model, ref.path)
    assert all(s != default for s in answer_states(ref, states)), task.task_id
    answer = rows_as_answer(
        answer_pages(app, task), ref.answer.table, task.columns, task.field_sep, task.record_sep
    )
    score = score_answer(task, answer)
    assert (score.item_f1, score.row_f1, score.poa) == (1.0, 1.0, 1.0), task.task_id
    default_page = app.render(states[0])
    alone = rows_as_answer([default_page], "results", task.columns, task.field_sep, task.record_sep)
    assert score_answer(task, alone).item_f1 < 0.5, task.task_id
    default_rows = {
        tuple(row.get(c, "") for c in task.columns)
        for row in extract_tables(default_page).get("results", [])
    }
    assert not default_rows & set(task.gold_rows), task.task_id


def check_task_set(site: str, tasks: list[ScoringTask]) -> None:
    """The task set is ``PAIRS`` CG/GO pairs with 2-20 answer rows each; its references use a
    data control and need more than one page (counted over both variants of each pair)."""
    ids = pair_ids(site)
    assert sorted(t.task_id for t in tasks) == sorted(ids + [f"{i}-g" for i in ids])
    for task in tasks:
        assert 2 <= len(task.gold_rows) <= 20, task.task_id
        assert 2 <= task.task.oracle_output_cardinality <= 20, task.task_id
    references = [reference(t) for t in tasks]
    data_ops = sum(any(op.type == "data" for op in r.path) for r in references)
    multi = sum(
        len(r.answer.states) > 1 or any(op.op == "page" for op in r.path) for r in references
    )
    assert data_ops >= 2 and multi >= 2


def check_reference_script(site: str, tasks: list[ScoringTask]) -> None:
    """The reference script's ``answers()`` are the oracle answers of every pair, both as
    written in each task file and as loaded into ``tasks``."""
    answers: dict[str, str] = reference_module(site).answers()
    assert sorted(answers) == pair_ids(site)
    for path in task_files(site):
        lines = path.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines]
        assert {r["task_id"].removesuffix("-g"): r["oracle_answer"] for r in records} == answers
    for task in tasks:
        assert task.task.oracle_answer == answers[task.task.pair_id], task.task_id
    cg = {t.task_id: t.task.oracle_answer for t in tasks if t.variant == "CG"}
    assert cg == answers


class SiteTaskChecks:
    """The generic tests of one site's task set, run by a ``Test...`` subclass that sets
    ``site``; they use the ``app`` and ``tasks`` fixtures of :func:`site_fixtures`."""

    site: ClassVar[str]

    def test_reference_script_matches_the_task_files(self, tasks: list[ScoringTask]) -> None:
        check_reference_script(self.site, tasks)

    def test_task_set_shape(self, tasks: list[ScoringTask]) -> None:
        check_task_set(self.site, tasks)

    @pytest.mark.parametrize("index", range(2 * PAIRS))
    def test_reference_path_scores_perfectly(
        self, index: int, app: SiteApp, tasks: list[ScoringTask]
    ) -> None:
        check_reference_path(app, tasks[index])


def http_get(base: str, target: str) -> tuple[int, bytes]:
    """GET ``target`` (a path or an absolute proxy-style URL) from the server at ``base``;
    the response's status and body."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        conn.request("GET", target)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()
