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
        source = "cwe2 "
        licence = ("MIT", "Terms of Use")
"""

from __future__ import annotations

import csv
import functools
import http.client
import importlib.util
import io
import json
import re
from pathlib import Path
from types import ModuleType
from typing import ClassVar
from urllib.parse import urlsplit

import pytest

from sgrgym.sgr.score import score_answer
from sgrgym.sgr.sites.app import SITES, SiteApp, load_site
from sgrgym.sgr.sites.model import Op, SiteError, SiteModel, State
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.sgr.sites.reference import Reference, answer_states, reference_of, rows_as_answer, walk
from sgrgym.sgr.tasks import ScoringTask, load_tasks
from sgrgym.snapshot.reading import page_targets, read_page

TASKS_ROOT = Path(__file__).resolve().parent.parent / "tasks" / "sgr"
PAIRS: dict[str, int] = {
    "cwe": 5,
    "elements": 5,
    "places": 6,
    "diseases": 7,
    "weather": 7,
}
"""How many CG/GO task pairs each site ships."""
MAX_ROWS = 44  # the paper's largest answer (SGR-Bench section 3.3: 2-44 rows)


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
    return [f"{site}_{n:03d}" for n in range(1, PAIRS[site] + 1)]


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
    """The task set is ``PAIRS[site]`` CG/GO pairs with 1-44 answer rows each; every pair's
    reference path has a data-dependent step (a logical dependency, SGR-Bench section 3.2.2),
    and both variants of a pair share answer, schema, format and reference."""
    ids = pair_ids(site)
    assert sorted(t.task_id for t in tasks) == sorted(ids + [f"{i}-g" for i in ids])
    by_id = {t.task_id: t for t in tasks}
    for task in tasks:
        assert 1 <= len(task.gold_rows) <= MAX_ROWS, task.task_id
        assert task.task.oracle_output_cardinality == len(task.gold_rows), task.task_id
        assert any(op.type == "data" for op in reference(task).path), task.task_id
        metadata = task.task.metadata
        assert metadata.dependency_type in DEPENDENCY_TYPES, task.task_id
        assert metadata.data_dependency, task.task_id
        assert metadata.freeze, task.task_id
    for pair in ids:
        cg, go = by_id[pair].task, by_id[f"{pair}-g"].task
        assert cg.oracle_answer == go.oracle_answer, pair
        assert cg.output_format == go.output_format, pair
        assert cg.rubric == go.rubric, pair
        assert cg.model_extra == go.model_extra, pair
        assert cg.instruction != go.instruction, pair


DEPENDENCY_TYPES = ("Data", "Control", "Data + Control")


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


def check_model(app: SiteApp, source: str, licence: tuple[str, ...], kinds: frozenset[str]) -> None:
    """The site's model survives a dump and a validation unchanged; it is served under
    ``<name>.sgrgym.test`` from ``/``, its source starts with ``source`` (the data package),
    its licence names each of ``licence`` and its controls include every kind of ``kinds``."""
    model = app.model
    assert SiteModel.model_validate(model.model_dump()) == model
    assert model.host == f"{model.name}.sgrgym.test"
    assert model.default_state().path == "/"
    assert model.source.startswith(source), model.source
    assert all(term in model.licence for term in licence), model.licence
    assert kinds <= {c.kind for c in model.controls}


def check_listed_states(app: SiteApp) -> None:
    """The states a pack holds: the default first, the default of every route with a table
    among them, none twice, at most 400; the list and every page are the same each time;
    every HTML page but the text pages has a ``results`` table of at most one page of rows,
    and its state round-trips through its URL."""
    model = app.model
    states = list(app.states())
    assert states[0] == model.default_state()
    assert len(set(states)) == len(states) <= 400
    assert list(app.states()) == states
    for route in model.routes:
        if route.tables:
            assert model.state(route.path) in states, route.path
    for state in states:
        page = app.render(state)
        assert app.render(state) == page, state.describe()
        if "html" not in app.content_type(state):
            continue
        if state.path in model.indexable:  # text pages (about): no data tables
            assert extract_tables(page) == {}, state.describe()
            continue
        assert len(extract_tables(page)["results"]) <= app.page_size, state.describe()
        assert model.parse_url(model.url(state)) == state


ALL_KINDS = frozenset({"hierarchy", "filter", "scope", "window", "sort", "page"})


class SiteTaskChecks:
    """The generic tests of one site (its model, the states it lists) and of its task set,
    run by a ``Test...`` subclass that sets ``site``, ``source`` and ``licence`` (see
    :func:`check_model`), and ``domain`` when its tasks all name one; they use the ``app`` and
    ``tasks`` fixtures of :func:`site_fixtures`."""

    site: ClassVar[str]
    source: ClassVar[str]
    licence: ClassVar[tuple[str, ...]]
    kinds: ClassVar[frozenset[str]] = ALL_KINDS
    domain: ClassVar[str | None] = None

    def test_model_validates(self, app: SiteApp) -> None:
        check_model(app, self.source, self.licence, self.kinds)

    def test_listed_states_render(self, app: SiteApp) -> None:
        check_listed_states(app)

    def test_reference_script_matches_the_task_files(self, tasks: list[ScoringTask]) -> None:
        check_reference_script(self.site, tasks)

    def test_task_set_shape(self, tasks: list[ScoringTask]) -> None:
        check_task_set(self.site, tasks)
        if self.domain is not None:
            assert all(task.domain == self.domain for task in tasks)

    def test_reference_paths_score_perfectly(self, app: SiteApp, tasks: list[ScoringTask]) -> None:
        for task in tasks:
            check_reference_path(app, task)

    def test_data_dependent_values_come_from_earlier_pages(
        self, app: SiteApp, tasks: list[ScoringTask]
    ) -> None:
        for task in tasks:
            check_dependency_evidence(app, task)

    def test_no_reference_row_near_any_default_state(self, tasks: list[ScoringTask]) -> None:
        for task in tasks:
            check_state_gated(task)


def page_text(app: SiteApp, state: State) -> str:
    """The text an agent reads on ``state``'s page (HTML, CSV or PDF) and its table cells."""
    body = app.render(state)
    content_type = app.content_type(state)
    cells = []
    if "html" in content_type:
        cells = [v for rows in extract_tables(body).values() for row in rows for v in row.values()]
    return read_page(body, content_type, app.model.url(state)) + "\n" + "\n".join(cells)


def _shows(text: str, value: str) -> bool:
    """True when ``value`` appears in ``text`` as a whole token (or phrase)."""
    return re.search(r"(?<![\w.])" + re.escape(value) + r"(?![\w])", text) is not None


def check_dependency_evidence(app: SiteApp, task: ScoringTask) -> None:
    """Every data-dependent step of the reference path takes a value (each ``/`` or ``.``
    part of a node, the start of a window) that a page reached earlier on the path shows: the
    intermediate result is read from the site, not known in advance (section 3.2.2)."""
    ref = reference(task)
    states = walk(app.model, ref.path)
    texts: list[str] = []
    for index, op in enumerate(ref.path):
        texts.append(page_text(app, states[index]))
        if op.type != "data":
            continue
        seen = "\n".join(texts)
        parts = re.split(r"[/.]", op.value) if op.op == "open_node" else [op.value]
        for part in parts:
            assert _shows(seen, part), (
                f"{task.task_id}: step {index + 1} ({op.op} {op.value!r}): {part!r} is on no "
                "earlier page of the path"
            )


def one_step_states(app: SiteApp) -> list[State]:
    """The default state and every state one operation away from it: each route's default
    (a view change), each offered value of the start page's controls, each link on it."""
    model = app.model
    default = model.default_state()
    found: dict[State, None] = {default: None}
    for route in model.routes:
        found[model.state(route.path)] = None
    ops = {
        "filter": "set_filter",
        "scope": "set_scope",
        "hierarchy": "open_node",
        "view": "select_view",
        "page": "page",
    }
    for control in model.route_controls(default.path):
        for value in control.values:
            try:
                if control.kind == "sort":
                    for order in ("asc", "desc"):
                        op = Op(op="sort", control=control.name, value=value, end=order)
                        found[model.apply(default, op)] = None
                elif control.kind in ops:
                    op = Op(op=ops[control.kind], control=control.name, value=value)  # type: ignore[arg-type]
                    found[model.apply(default, op)] = None
            except SiteError:
                continue
    for url in page_targets(app.render(default), "text/html", model.url(default)):
        if urlsplit(url).netloc == model.host:
            try:
                found[model.parse_url(url)] = None
            except SiteError:
                continue
    return list(found)


@functools.lru_cache(maxsize=1)
def exposed_rows() -> tuple[dict[str, str], ...]:
    """The table rows of every site's default state and of every state one step away."""
    rows: list[dict[str, str]] = []
    for name in sorted(SITES):
        app = load_site(name)
        for state in one_step_states(app):
            try:
                body = app.render(state)
            except SiteError:
                continue  # a 404/400 page shows no rows
            content_type = app.content_type(state)
            if "html" in content_type:
                rows += [r for table in extract_tables(body).values() for r in table]
            elif "csv" in content_type:
                rows += list(csv.DictReader(io.StringIO(body.decode("utf-8"))))
    return tuple(rows)


def check_state_gated(task: ScoringTask) -> None:
    """No reference row of ``task`` is in the default state of any site, nor in any state one
    operation away from one (rows compared field by field after the rubric's canonicalisation)."""
    gold = set(task.gold_canon)
    for row in exposed_rows():
        if not all(c in row for c in task.columns):
            continue
        canon = tuple(f(row[c]) for f, c in zip(task.canons, task.columns, strict=True))
        assert canon not in gold, f"{task.task_id}: reference row {canon} is near a default state"


def http_get(base: str, target: str, timeout: float = 10) -> tuple[int, bytes]:
    """GET ``target`` (a path or an absolute proxy-style URL) from the server at ``base``;
    the response's status and body."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        conn.request("GET", target)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()
