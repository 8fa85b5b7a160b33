"""Site models, pack building, the simulator, the SGR environment, agents and runs (toy site)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sgr_helpers import write_jsonl
from toy_site import MODEL, SOUTH_TWO_PAGES, TREES_BY_HEIGHT, ToySite

from sgrgym.errors import UserError
from sgrgym.sgr.agents import DefaultStateAgent, OracleAgent, RandomAgent
from sgrgym.sgr.archive.replay import Snapshot
from sgrgym.sgr.diagnostics import diagnose
from sgrgym.sgr.env import Budget, SgrEnv
from sgrgym.sgr.run import run_card, run_tasks
from sgrgym.sgr.simulator import Simulator
from sgrgym.sgr.sites.build import build_pack
from sgrgym.sgr.sites.model import Op, SiteError, site_models
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.sgr.sites.reference import reference_of, walk
from sgrgym.sgr.tasks import ScoringTask, load_tasks


def test_state_url_round_trip_and_defaults() -> None:
    state = MODEL.state("/plants", {"kind": "tree", "sort": "name", "order": "asc", "page": "1"})
    assert state.params == (("kind", "tree"),)  # defaults are left out of the URL
    url = MODEL.url(state)
    assert url == "http://toy.sgrgym.test/plants?kind=tree"
    assert MODEL.parse_url(url) == state
    assert MODEL.parse_url("http://toy.sgrgym.test/plants?page=1&kind=tree") == state


def test_operations_and_their_errors() -> None:
    start = MODEL.state("/plants", {"page": "2"})
    tree = MODEL.apply(start, Op(op="set_filter", control="kind", value="tree"))
    assert tree.params == (("kind", "tree"),)  # a new filter starts again at page 1
    by_height = MODEL.apply(tree, Op(op="sort", control="sort", value="height", end="desc"))
    assert by_height.get("sort") == "height" and by_height.get("order") == "desc"
    assert MODEL.apply(by_height, Op(op="clear_filter", control="kind")).get("kind") == ""
    with pytest.raises(SiteError, match="not offered"):
        MODEL.apply(tree, Op(op="set_filter", control="kind", value="cactus"))
    with pytest.raises(SiteError, match="cannot change scope control"):
        MODEL.apply(tree, Op(op="set_filter", control="zone", value="north"))
    with pytest.raises(SiteError, match="this page has no 'kind' control"):
        MODEL.apply(MODEL.default_state(), Op(op="set_filter", control="kind", value="tree"))
    with pytest.raises(SiteError, match="not a page of toy"):
        MODEL.parse_url("http://other.sgrgym.test/plants")
    with pytest.raises(SiteError, match="no parameter 'colour'"):
        MODEL.parse_url("http://toy.sgrgym.test/plants?colour=red")


def test_pages_carry_tables_and_links() -> None:
    page = ToySite().render(MODEL.state("/plants", {"kind": "tree"}))
    assert extract_tables(page)["results"] == [
        {"name": "alder", "kind": "tree", "height": "20"},
        {"name": "birch", "kind": "tree", "height": "25"},
    ]
    assert b'href="http://toy.sgrgym.test/plants?kind=tree&amp;page=2"' in page


@pytest.fixture(scope="module")
def toy_pack(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ScoringTask]]:
    root = tmp_path_factory.mktemp("toy")
    files = [write_jsonl(root / "constraint.jsonl", [TREES_BY_HEIGHT, SOUTH_TWO_PAGES])]
    tasks = load_tasks(files)
    result = build_pack(root / "packs" / "toy", [ToySite()], tasks, update_pin=True)
    assert not result.repinned and result.new_pin and result.states == {"toy": 9}
    return result.pack_dir, tasks


def test_pack_is_pinned_and_rebuilds_identically(
    toy_pack: tuple[Path, list[ScoringTask]],
) -> None:
    pack, tasks = toy_pack
    pinned = (pack / "manifest.json").read_bytes()
    again = build_pack(pack, [ToySite()], tasks)  # the committed pin is checked
    assert not again.repinned and (pack / "manifest.json").read_bytes() == pinned
    manifest = json.loads(pinned)
    assert manifest["sites"][0]["host"] == "toy.sgrgym.test"
    assert manifest["sites"][0]["model"]["name"] == "toy"  # the site model lives in the pack
    assert "127.0.0.1" not in (pack / "warc" / "toy-00000.warc.gz").read_bytes().decode("latin-1")


def test_a_different_build_is_refused_unless_repinned(
    toy_pack: tuple[Path, list[ScoringTask]], tmp_path: Path
) -> None:
    import shutil

    pack, tasks = toy_pack
    copy = tmp_path / "toy"
    shutil.copytree(pack, copy)
    with pytest.raises(UserError, match="differs from its pinned manifest"):
        build_pack(copy, [ToySite()], tasks[:1])  # fewer reference states -> other bytes
    assert build_pack(copy, [ToySite()], tasks[:1], update_pin=True).repinned


def env_for(pack: Path, **budget: float) -> SgrEnv:
    snapshot = Snapshot.open(pack)
    return SgrEnv(snapshot, site_models(snapshot.manifest.sites), Budget(**budget))


def test_simulator_records_states_and_names_misses(
    toy_pack: tuple[Path, list[ScoringTask]],
) -> None:
    env = env_for(toy_pack[0])
    sim = Simulator(env.snapshot, env.sites)
    ok = sim.operate("toy", Op(op="select_view", value="/plants"))
    assert ok.ok and ok.url == "http://toy.sgrgym.test/plants"
    miss = sim.operate("toy", Op(op="set_scope", control="zone", value="north"))
    assert not miss.ok and miss.response is not None and miss.response.status == 404
    assert miss.message == (
        "state not in snapshot: toy /plants [zone=north] (http://toy.sgrgym.test/plants?zone=north)"
    )
    assert sim.state_of("toy") == MODEL.state("/plants")  # a miss does not move the state
    bad = sim.operate("toy", Op(op="set_filter", control="kind", value="cactus"))
    assert "not offered" in bad.error
    assert [s.match for s in sim.trajectory] == ["exact", "miss", "error"]


def test_oracle_scores_one_and_baselines_lower(
    toy_pack: tuple[Path, list[ScoringTask]], tmp_path: Path
) -> None:
    pack, tasks = toy_pack
    references = {t.task_id: r for t in tasks if (r := reference_of(t)) is not None}
    results = {}
    for agent in (OracleAgent(references), DefaultStateAgent(), RandomAgent(seed=3)):
        env = env_for(pack)
        card = run_card(env, agent, 3, [])
        report = run_tasks(env, agent, tasks, tmp_path / agent.name, card)
        results[agent.name] = report
    oracle = results["oracle"]
    assert all((t.item_f1, t.row_f1, t.poa) == (1.0, 1.0, 1.0) for t in oracle.tasks)
    assert results["default"].overall.item_f1 == 0.0  # the home page shows no plant rows
    assert (results["random"].overall.item_f1 or 0.0) < 1.0
    trajectories = [json.loads(x) for x in (tmp_path / "oracle/trajectories.jsonl").open()]
    assert trajectories[0]["diagnostics"]["hint"] == "solved"
    assert trajectories[0]["diagnostics"]["reference_states_reached"] == 1.0
    default = [json.loads(x) for x in (tmp_path / "default/trajectories.jsonl").open()]
    assert default[0]["diagnostics"]["hint"] == "drift"
    assert [s["tool"] for s in default[0]["steps"]] == ["search", "fetch", "answer"]


def test_same_run_twice_is_byte_identical_and_resumes(
    toy_pack: tuple[Path, list[ScoringTask]], tmp_path: Path
) -> None:
    pack, tasks = toy_pack
    outputs = []
    for name in ("a", "b"):
        agent = RandomAgent(seed=7)
        env = env_for(pack)
        run_tasks(env, agent, tasks, tmp_path / name, run_card(env, agent, 7, []))
        outputs.append(
            {f: (tmp_path / name / f).read_bytes() for f in
             ("answers.jsonl", "trajectories.jsonl", "scores.json", "run.json")}
        )  # fmt: skip
    assert outputs[0] == outputs[1]
    # Interrupted after the first episode (and mid-way through writing the second): resume.
    out = tmp_path / "a"
    lines = (out / "answers.jsonl").read_text().splitlines(keepends=True)
    (out / "answers.jsonl").write_text(lines[0] + lines[1][:10])
    agent = RandomAgent(seed=7)
    env = env_for(pack)
    run_tasks(env, agent, tasks, out, run_card(env, agent, 7, []))
    for name, data in outputs[0].items():
        assert (out / name).read_bytes() == data, name
    other = RandomAgent(seed=8)
    with pytest.raises(UserError, match="holds another run"):
        run_tasks(env, other, tasks, out, run_card(env, other, 8, []))


def test_budget_overrun_is_recorded_not_raised(
    toy_pack: tuple[Path, list[ScoringTask]], tmp_path: Path
) -> None:
    pack, tasks = toy_pack
    references = {t.task_id: r for t in tasks if (r := reference_of(t)) is not None}
    agent = OracleAgent(references)
    env = env_for(pack, max_tool_calls=2)
    report = run_tasks(env, agent, tasks, tmp_path / "tight", run_card(env, agent, 0, []))
    trajectories = [json.loads(x) for x in (tmp_path / "tight/trajectories.jsonl").open()]
    assert trajectories[0]["ended_by"] == "budget: more than 2 tool calls"
    assert trajectories[0]["tool_calls"] == 2
    assert report.missing == [t.task_id for t in tasks]


def test_diagnostics_locate_divergence(toy_pack: tuple[Path, list[ScoringTask]]) -> None:
    pack, tasks = toy_pack
    reference = reference_of(tasks[1])
    assert reference is not None
    env = env_for(pack)
    sim = Simulator(env.snapshot, env.sites)
    sim.fetch(MODEL.url(MODEL.default_state()))
    sim.operate("toy", Op(op="select_view", value="/plants"))
    sim.operate("toy", Op(op="set_filter", control="kind", value="tree"))  # wrong scope
    diag = diagnose(reference, MODEL, sim.trajectory, item_f1=0.3)
    assert diag.first_divergence_step == 3 and diag.steps_outside_reference == 1
    assert diag.hint == "drift" and diag.reference_states_reached == 0.5
    states = walk(MODEL, reference.path)
    for state in states[2:]:
        sim.fetch(MODEL.url(state))
    assert diagnose(reference, MODEL, sim.trajectory, item_f1=0.5).hint == "criterion"
