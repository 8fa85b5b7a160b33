"""Site models, pack building, the simulator, the SGR environment, agents and runs (toy site)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import pytest
from sgr_helpers import write_jsonl
from toy_site import MODEL, SOUTH_TWO_PAGES, TREES_BY_HEIGHT, ToySite

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.sgr.agents import DefaultStateAgent, OracleAgent, RandomAgent
from sgrgym.sgr.cli_agents.tools import call_tool
from sgrgym.sgr.diagnostics import diagnose
from sgrgym.sgr.env import Budget, BudgetExceeded, SgrEnv, TaskObservation
from sgrgym.sgr.prompt import PROMPT_TEMPLATE
from sgrgym.sgr.render import load_renderer
from sgrgym.sgr.run import run_card, run_tasks
from sgrgym.sgr.score import score_answer
from sgrgym.sgr.simulator import PLAIN_404, Simulator
from sgrgym.sgr.sites.app import SITES
from sgrgym.sgr.sites.build import build_pack
from sgrgym.sgr.sites.model import Op, SiteError, State, site_models
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.sgr.sites.reference import reference_of, walk
from sgrgym.sgr.tasks import ScoringTask, load_tasks
from sgrgym.sgr.watchdog import watch_episode
from sgrgym.snapshot.replay import Snapshot


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
    # an address typed by hand: a parameter the site does not read is ignored, as real
    # sites do; a state built by the site's own code still refuses it
    assert MODEL.parse_url("http://toy.sgrgym.test/plants?colour=red&kind=tree") == tree
    with pytest.raises(SiteError, match="no parameter 'colour'"):
        MODEL.state("/plants", {"colour": "red"})
    with pytest.raises(SiteError) as refused:
        MODEL.parse_url("http://toy.sgrgym.test/plants?kind=cactus")
    assert "tree" not in str(refused.value)  # the values offered are never listed


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


def test_without_renderer_a_miss_is_a_plain_404(
    toy_pack: tuple[Path, list[ScoringTask]],
) -> None:
    env = env_for(toy_pack[0])
    sim = Simulator(env.snapshot, env.sites)
    ok = sim.operate("toy", Op(op="select_view", value="/plants"))
    assert ok.ok and ok.url == "http://toy.sgrgym.test/plants"
    miss = sim.operate("toy", Op(op="set_scope", control="zone", value="north"))
    assert not miss.ok and miss.served is not None and miss.served.status == 404
    assert miss.served.body == PLAIN_404  # says nothing about what the pack holds
    assert b"snapshot" not in miss.served.body.lower()
    assert sim.state_of("toy") == MODEL.state("/plants")  # a miss does not move the state
    bad = sim.operate("toy", Op(op="set_filter", control="kind", value="cactus"))
    assert "not offered" in bad.error
    assert [s.match for s in sim.trajectory] == ["exact", "miss", "error"]
    unparsable = sim.fetch("http://[::1")  # urllib refuses it: a tool error, and a step
    assert unparsable.served is None and "not a valid URL" in unparsable.error
    assert [s.match for s in sim.trajectory] == ["exact", "miss", "error", "error"]


def test_renderer_reaches_every_state_with_the_sites_own_pages(
    toy_pack: tuple[Path, list[ScoringTask]],
) -> None:
    snapshot = Snapshot.open(toy_pack[0])
    renderer = load_renderer(snapshot, [ToySite()])
    sim = Simulator(snapshot, site_models(snapshot.manifest.sites), renderer)
    sim.operate("toy", Op(op="select_view", value="/plants"))
    north = sim.operate("toy", Op(op="set_scope", control="zone", value="north"))
    assert north.ok and north.served is not None
    assert north.served.body == ToySite().render(MODEL.state("/plants", {"zone": "north"}))
    cactus = sim.operate("toy", Op(op="set_filter", control="kind", value="cactus"))
    assert cactus.served is not None and cactus.served.status == 400  # its validation page
    assert b"<nav" in cactus.served.body and b"Nothing matches this selection" in cactus.served.body
    assert b"cactus" not in cactus.served.body and b"kind" not in cactus.served.body.lower()
    far = sim.operate("toy", Op(op="page", control="page", value="9"))
    other = sim.fetch("http://toy.sgrgym.test/nowhere")
    assert far.served is not None and other.served is not None
    assert far.served.status == other.served.status == 404
    assert far.served.body == other.served.body  # one 404 page for every miss
    assert [s.match for s in sim.trajectory] == [
        "exact",
        "rendered",
        "rendered",
        "rendered",
        "rendered",
    ]


def test_unknown_parameters_are_ignored_and_errors_say_nothing_of_values(
    toy_pack: tuple[Path, list[ScoringTask]],
) -> None:
    snapshot = Snapshot.open(toy_pack[0])
    env = SgrEnv(
        snapshot,
        site_models(snapshot.manifest.sites),
        Budget(),
        renderer=load_renderer(snapshot, [ToySite()]),
    )
    asked = "http://toy.sgrgym.test/plants?kind=tree&colour=red"
    page = env.fetch(asked)
    assert page.status == 200 and page.url == asked  # the address as asked for
    assert page.body == env.fetch("http://toy.sgrgym.test/plants?kind=tree").body
    step = env.sim.trajectory[0]
    assert step.args == {"url": asked}
    assert step.state == "http://toy.sgrgym.test/plants?kind=tree"
    bad = call_tool(env, "fetch", {"url": "http://toy.sgrgym.test/plants?kind=cactus"})
    body = bad.split("\n", 2)[2]
    assert "HTTP status 400" in bad and "Nothing matches this selection" in body
    assert "cactus" not in body and "shrub" not in body


def test_a_renderer_that_differs_from_the_pack_is_refused(
    toy_pack: tuple[Path, list[ScoringTask]],
) -> None:
    changed = ToySite()
    changed.model = MODEL.model_copy(update={"source": "made up, version 2"})
    with pytest.raises(UserError, match=r"not the one the pack was built with.*source"):
        load_renderer(Snapshot.open(toy_pack[0]), [changed])


@contextmanager
def registered_toy(spec: str) -> Iterator[None]:
    """The toy site in the replica-site registry (``spec``: module[:factory]), as the task
    sites are: a renderer then loads it itself, on first use."""
    SITES.register("toy", spec)
    try:
        yield
    finally:
        SITES.unregister("toy")


def test_an_app_is_loaded_when_its_site_is_first_rendered(
    toy_pack: tuple[Path, list[ScoringTask]],
) -> None:
    snapshot = Snapshot.open(toy_pack[0])
    with registered_toy("toy_site"):
        renderer = load_renderer(snapshot)
        assert renderer.handles("toy") and renderer.loaded() == []
        card = renderer.card()  # the run card needs no app
        assert renderer.loaded() == []
        assert card["toy"].source == MODEL.source and card["toy"].data_files == {}
        env = SgrEnv(snapshot, site_models(snapshot.manifest.sites), Budget(), renderer=renderer)
        assert env.fetch("http://toy.sgrgym.test/plants").status == 200  # archived
        assert env.search("plant register") and renderer.loaded() == []
        north = env.fetch("http://toy.sgrgym.test/plants?zone=north")
        assert north.status == 200 and env.sim.trajectory[-1].match == "rendered"
        assert renderer.loaded() == ["toy"]
        assert renderer.card() == card


class _RendersNorth:
    """An agent whose first page is one the pack does not hold (rendered by the app)."""

    name = "renders-north"

    def act(self, env: SgrEnv, obs: TaskObservation) -> str:
        env.fetch("http://toy.sgrgym.test/plants")
        env.fetch("http://toy.sgrgym.test/plants?zone=north")
        return ""


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (
            "changed_home",
            r"site toy: the installed app renders http://toy\.sgrgym\.test/ differently from "
            r"the archived page \(the site code changed\); install the versions",
        ),
        (
            "changed_source",
            r"site toy: the installed site app is not the one the pack was built with "
            r"\(source: pack 'made up for tests', installed 'made up, version 2'\)",
        ),
    ],
)
def test_a_changed_app_is_refused_when_first_used(
    toy_pack: tuple[Path, list[ScoringTask]], tmp_path: Path, factory: str, message: str
) -> None:
    pack, tasks = toy_pack
    snapshot = Snapshot.open(pack)
    with registered_toy(f"toy_site:{factory}"):
        renderer = load_renderer(snapshot)  # nothing loaded yet, so nothing refused yet
        env = SgrEnv(snapshot, site_models(snapshot.manifest.sites), Budget(), renderer=renderer)
        assert env.fetch("http://toy.sgrgym.test/").status == 200  # archived pages are served
        with pytest.raises(UserError, match=message):
            env.fetch("http://toy.sgrgym.test/plants?zone=north")
        assert renderer.loaded() == []  # a refused app is never used
        with pytest.raises(UserError, match=message):
            renderer.respond("toy", "http://toy.sgrgym.test/plants?kind=herb&zone=north")
        # In a run, the refusal stops the run with its message; the episode is not recorded.
        agent = _RendersNorth()
        env = SgrEnv(snapshot, env.sites, Budget(), renderer=load_renderer(snapshot))
        with pytest.raises(UserError, match=message):
            run_tasks(env, agent, tasks, tmp_path / "run", run_card(env, agent, 0, []))
        assert not (tmp_path / "run" / "answers.jsonl").exists()


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
    assert trajectories[0]["diagnostics"]["category"] == "solved"
    assert trajectories[0]["ended_by"] == "answer" and trajectories[0]["answer_from"] == "final"
    default = [json.loads(x) for x in (tmp_path / "default/trajectories.jsonl").open()]
    assert default[0]["diagnostics"]["category"] == "retrieval-scope drift"
    assert default[0]["target_site_rank"] == 1
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
            {
                f: (tmp_path / name / f).read_bytes()
                for f in ("answers.jsonl", "trajectories.jsonl", "scores.json", "run.json")
            }
        )
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
    assert trajectories[0]["ended_by"] == "budget: tool calls"
    assert trajectories[0]["error"] == "budget: more than 2 tool calls"
    assert trajectories[0]["tool_calls"] == 2 and trajectories[0]["answer_from"] == "none"
    assert report.missing == [t.task_id for t in tasks]


def test_diagnostics_locate_the_root_cause(toy_pack: tuple[Path, list[ScoringTask]]) -> None:
    pack, tasks = toy_pack
    task = tasks[1]
    reference = reference_of(task)
    assert reference is not None
    env = env_for(pack)
    sim = Simulator(env.snapshot, env.sites, load_renderer(env.snapshot, [ToySite()]))
    sim.fetch(MODEL.url(MODEL.default_state()))
    sim.operate("toy", Op(op="select_view", value="/plants"))
    sim.operate("toy", Op(op="set_filter", control="kind", value="tree"))  # wrong scope
    wrong = score_answer(task, "cedar|tree|40")

    def category(answer: str | None) -> str:
        score = score_answer(task, answer)
        return diagnose(task, reference, MODEL, sim.trajectory, score, answer).category

    diag = diagnose(task, reference, MODEL, sim.trajectory, wrong, "cedar|tree|40")
    assert diag.category == "retrieval-scope drift" and diag.first_divergence_step == 3
    assert diag.first_missed_state == "http://toy.sgrgym.test/plants?zone=south"
    sim.fetch("http://toy.sgrgym.test/plants?zone=north")  # a wrong scope value: still drift
    assert category("cedar|tree|40") == "retrieval-scope drift"
    trees = tasks[0]
    shrubs = Simulator(env.snapshot, env.sites, sim.renderer)
    shrubs.fetch("http://toy.sgrgym.test/plants?kind=shrub&sort=height&order=desc")
    scored = score_answer(trees, "dogwood|shrub|6")
    # right control (the kind filter), wrong value
    assert (
        diagnose(
            trees, reference_of(trees), MODEL, shrubs.trajectory, scored, "dogwood|shrub|6"
        ).category
        == "criterion mismatch"
    )
    states = walk(MODEL, reference.path)
    for state in states[2:]:
        sim.fetch(MODEL.url(state))
    assert category("cedar|tree|40\ndogwood|shrub|7\nfern|herb|1") == "in-page evidence misreading"
    assert category("fern|herb|1\ndogwood|shrub|6\ncedar|tree|40") == "final answer composition"
    assert category(None) == "no answer"
    assert category(task.task.oracle_answer) == "solved"


class SleepingAgent:
    """Submits an interim answer, then blocks (as in a model call) until released."""

    name = "sleeper"

    def __init__(self, answer: str, calls_first: int = 0) -> None:
        self.answer = answer
        self.calls_first = calls_first
        self.release = threading.Event()
        self.late_call: BaseException | None = None

    def act(self, env: SgrEnv, obs: TaskObservation) -> str:
        for _ in range(self.calls_first):
            env.search(obs.instruction)
        env.submit_answer(self.answer)
        self.release.wait(60)
        try:
            env.search("anything")
        except BudgetExceeded as exc:
            self.late_call = exc
        return "a late answer that must not count"


def test_watchdog_stops_a_sleeping_agent_and_scores_its_interim_answer(
    toy_pack: tuple[Path, list[ScoringTask]],
) -> None:
    pack, tasks = toy_pack
    task = tasks[0]
    agent = SleepingAgent(task.task.oracle_answer)
    env = env_for(pack, max_wall_s=0.3)
    episode = watch_episode(env, agent, env.reset(task))
    assert episode.ended_by == "budget: wall" and episode.answer_from == "submitted"
    assert episode.answer == task.task.oracle_answer
    assert score_answer(task, episode.answer).item_f1 == 1.0
    assert env.submitted_answer() == task.task.oracle_answer  # what an outside poller reads
    env.reset(tasks[1])  # the next episode has begun when the abandoned agent wakes up
    agent.release.set()
    for _ in range(600):  # the abandoned thread's later tool call is refused
        if agent.late_call is not None:
            break
        threading.Event().wait(0.05)
    assert isinstance(agent.late_call, BudgetExceeded)
    assert [s.tool for s in episode.trajectory] == ["submit_answer"]
    assert env.episode.tool_calls == 0 and env.sim.trajectory == []  # nothing leaked into it


def test_watchdog_stall_and_agent_errors(toy_pack: tuple[Path, list[ScoringTask]]) -> None:
    pack, tasks = toy_pack
    sleeper = SleepingAgent("alder|tree|20", calls_first=2)
    env = env_for(pack, stall_s=0.3)
    episode = watch_episode(env, sleeper, env.reset(tasks[0]))
    sleeper.release.set()
    assert episode.ended_by == "budget: stall" and episode.tool_calls == 3
    assert episode.answer == "alder|tree|20"

    class Failing:
        name = "failing"

        def act(self, env: SgrEnv, obs: TaskObservation) -> str:
            env.submit_answer("birch|tree|25")
            raise RuntimeError("model endpoint gone")

    env = env_for(pack)
    episode = watch_episode(env, Failing(), env.reset(tasks[0]))
    assert episode.ended_by == "agent error" and "model endpoint gone" in episode.error
    assert episode.answer == "birch|tree|25" and episode.answer_from == "submitted"
    assert Budget().max_tool_calls is None  # the paper has no tool-call cap


def test_every_agent_gets_the_versioned_prompt(
    toy_pack: tuple[Path, list[ScoringTask]],
) -> None:
    pack, tasks = toy_pack
    env = env_for(pack)
    obs = env.reset(tasks[0])
    assert obs.prompt.startswith("Date today: 2026-01-01")
    assert tasks[0].task.instruction in obs.prompt
    assert "name, kind, height" in obs.prompt and obs.output_format in obs.prompt
    assert "toy.sgrgym.test" not in obs.prompt  # no start URL
    assert "submit_answer" in obs.prompt and "search(query)" in obs.prompt
    card = run_card(env, DefaultStateAgent(), 0, [])
    template = (resources.files("sgrgym.sgr") / "prompts" / PROMPT_TEMPLATE).read_bytes()
    assert card.prompt_sha256 == hashlib.sha256(template).hexdigest()


def test_audit_counts_categories(
    toy_pack: tuple[Path, list[ScoringTask]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack, tasks = toy_pack
    references = {t.task_id: r for t in tasks if (r := reference_of(t)) is not None}
    for agent in (OracleAgent(references), DefaultStateAgent()):
        env = env_for(pack)
        run_tasks(env, agent, tasks, tmp_path / agent.name, run_card(env, agent, 0, []))
    assert (
        main(["sgr", "audit", str(tmp_path / "oracle"), str(tmp_path / "default"), "--json"]) == 0
    )
    audit = json.loads(capsys.readouterr().out)
    oracle, default = audit["runs"]
    assert (oracle["solved"], oracle["failures"]) == (2, 0)
    assert (
        default["counts"]["retrieval-scope drift"] == 2
        and default["shares"]["retrieval-scope drift"] == 1.0
    )
    assert audit["not_detected"] == ["intent rewriting"]
    assert main(["sgr", "audit", str(tmp_path)]) == 2  # not a run folder: a clear error
    assert "not an sgr run folder" in capsys.readouterr().err


def test_without_renderer_a_miss_gets_the_hosts_archived_404_page(tmp_path: Path) -> None:
    class WithNotFound(ToySite):
        def states(self) -> Iterable[State]:
            yield from super().states()
            yield MODEL.state("/plants", {"page": "9"})  # past the end: the site's 404 page

    result = build_pack(tmp_path / "toy404", [WithNotFound()], [], update_pin=True)
    snapshot = Snapshot.open(result.pack_dir)
    sim = Simulator(snapshot, site_models(snapshot.manifest.sites))
    archived_404 = snapshot.fetch("http://toy.sgrgym.test/plants?page=9")
    assert archived_404.status == 404 and b"<nav" in archived_404.body
    miss = sim.fetch("http://toy.sgrgym.test/plants?zone=north")
    assert miss.served is not None and miss.served.status == 404
    assert miss.served.body == archived_404.body and miss.served.match == "miss"
    elsewhere = sim.fetch("http://unknown.sgrgym.test/")
    assert elsewhere.served is not None and elsewhere.served.body == PLAIN_404


def test_make_env_with_no_argument_is_the_demo_pack(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sgrgym.sgr.make_env()`` opens the demo pack with appendix C's budgets, as the
    commands do (``open_world`` also returns the demo tasks, checked against their pins)."""
    import sgrgym.sgr
    from sgrgym.core import defaults
    from sgrgym.sgr.make import open_world

    root = Path(__file__).resolve().parents[1]
    if not (root / "snapshots" / "demo" / "warc").is_dir():
        pytest.skip("the demo pack is not built (setup/test builds it)")
    monkeypatch.chdir(root)
    env = sgrgym.sgr.make_env()
    try:
        assert env.budget.max_wall_s == defaults.MAX_WALL_S == 6000.0
        assert env.budget.stall_s == defaults.STALL_S == 3000.0
        assert env.current_date == defaults.CURRENT_DATE
        assert len(env.sites) >= 5
    finally:
        env.snapshot.close()
    world = open_world()
    try:
        assert len(world.tasks) == 60 and set(world.references) <= {t.task_id for t in world.tasks}
        renderer = world.env.renderer
        assert renderer is not None and renderer.loaded() == []  # no site app loaded to open it
        page = world.env.fetch("http://elements.sgrgym.test/nowhere")  # not archived: rendered
        assert page.status == 404 and world.env.sim.trajectory[-1].match == "rendered"
        assert renderer.loaded() == ["elements"]  # only the app of the site rendered
    finally:
        world.env.snapshot.close()
