"""Shards: ``--shard I/N`` runs a deterministic slice of a run's episodes into a folder of its
own, and ``sgrgym merge`` joins the finished shards into the folder the single run writes,
byte for byte; anything that is not all the finished shards of one run is refused, with
nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from run_files import folder_files, run_ok

from sgrgym.cli import main
from sgrgym.core.shard import Shard
from sgrgym.runs.folder import COMPLETE

ROOT = Path(__file__).resolve().parent.parent
DOCS = ["howto/auth-remote-user", "ref/models/fields", "topics/db/queries"]
SGR_ORACLE = ["sgr", "run", "--agent", "oracle", "--limit", "5", "--quiet", "--json"]
SGR_RANDOM = [
    *("sgr", "run", "--agent", "random", "--seed", "3", "--random-steps", "2"),
    *("--limit", "7", "--quiet", "--json"),
]
SEEKER = [
    *("seeker", "run", "--agent", "sentences", "--steps", "3", "--seeds", "2"),
    *("--docs", *DOCS, "--quiet", "--json"),
]


def _shards(argv: list[str], root: Path, count: int, *, jobs_on: int = 0) -> list[Path]:
    """The ``count`` shard folders of ``argv``, each run to the end (shard ``jobs_on`` with
    --jobs 2)."""
    folders = []
    for index in range(1, count + 1):
        out = root / f"shard{index}of{count}"
        jobs = ["--jobs", "2"] if index == jobs_on else []
        run_ok(argv, out, "--shard", f"{index}/{count}", *jobs)
        folders.append(out)
    return folders


def _merge(shards: list[Path], out: Path) -> int:
    return main(["merge", *map(str, shards), "--out", str(out)])


def _assert_same_as_single(argv: list[str], tmp_path: Path, count: int, jobs_on: int = 0) -> None:
    single = tmp_path / "single"
    run_ok(argv, single)
    shards = _shards(argv, tmp_path, count, jobs_on=jobs_on)
    merged = tmp_path / "merged"
    assert _merge(list(reversed(shards)), merged) == 0  # any order of the folders
    assert folder_files(merged) == folder_files(single)
    assert (merged / COMPLETE).read_bytes() == (single / COMPLETE).read_bytes()
    assert main(["verify-run", str(merged)]) == 0


# -------------------------------------------------------------------- the slice itself


def test_a_shard_takes_every_nth_episode_of_the_single_run() -> None:
    episodes = list(range(10))
    parts = [Shard(i, 3).select(episodes) for i in (1, 2, 3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert sorted(e for part in parts for e in part) == episodes
    assert Shard.parse("2/3") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"
    assert Shard.of_card(Shard(2, 3).card()) == Shard(2, 3)


# --------------------------------------------------------- merged == single, byte for byte


def test_sgr_oracle_in_three_shards_merges_to_the_single_run(tmp_path: Path) -> None:
    _assert_same_as_single(SGR_ORACLE, tmp_path, 3, jobs_on=2)


def test_sgr_random_in_two_shards_merges_to_the_single_run(tmp_path: Path) -> None:
    _assert_same_as_single(SGR_RANDOM, tmp_path, 2, jobs_on=1)


def test_sgr_on_every_variant_in_two_shards_merges_to_the_single_run(tmp_path: Path) -> None:
    """No --task/--limit: the card names no variants, the task files decide the order."""
    _assert_same_as_single(["sgr", "run", "--agent", "default", "--quiet", "--json"], tmp_path, 2)


@pytest.mark.parametrize("count", [2, 3])
def test_seeker_in_shards_merges_to_the_single_run(tmp_path: Path, count: int) -> None:
    _assert_same_as_single(SEEKER, tmp_path, count, jobs_on=1)


def test_llm_agents_in_shards_merge_to_the_single_run(tmp_path: Path) -> None:
    """The committed baseline's LLM runs, replayed (a few variants): the agent's own results
    (llm_totals.json, the summary's totals) and the call logs join too."""
    from sgrgym.suite.baseline import command, load, unpack_cache

    baseline = ROOT / "baselines" / "qwen2.5-coder-0.5b"
    if not (ROOT / "tasks" / "seeker" / "djangodocs" / "corpus.jsonl").is_file():
        pytest.skip("the demo corpus is not built (setup/test builds it)")
    manifest = load(baseline)
    cache = unpack_cache(baseline, manifest, tmp_path)
    runs = {run.name: run for run in manifest.runs}
    for name, extra in (("sgr", ["--limit", "4"]), ("seeker-dedup", [])):
        root = tmp_path / name
        argv = command(runs[name], cache, root / "single", "replay") + extra
        assert main(argv) == 0
        shards = []
        for index in (1, 2):
            out = root / f"shard{index}"
            argv = command(runs[name], cache, out, "replay") + extra
            assert main([*argv, "--shard", f"{index}/2"]) == 0
            shards.append(out)
        assert _merge(shards, root / "merged") == 0
        assert folder_files(root / "merged") == folder_files(root / "single")
        log = json.loads((root / "merged" / "llm_run.json").read_text("utf-8"))
        assert log == json.loads((root / "single" / "llm_run.json").read_text("utf-8"))


# ------------------------------------------------------------------ resume after a kill


def _killed(folder: Path, records: str, finals: tuple[str, ...]) -> None:
    """The folder as a kill -9 in the middle of its second episode leaves it: the results and
    completion marker gone (removed at the run's first change), the record file cut after its
    first line plus part of the second."""
    for name in (COMPLETE, *finals):
        (folder / name).unlink()
    lines = (folder / records).read_bytes().splitlines(keepends=True)
    (folder / records).write_bytes(lines[0] + lines[1][: len(lines[1]) // 2])


def test_a_killed_sgr_shard_resumes_and_merges_to_the_single_run(tmp_path: Path) -> None:
    single = tmp_path / "single"
    run_ok(SGR_RANDOM, single)
    shards = _shards(SGR_RANDOM, tmp_path, 2)
    _killed(shards[0], "answers.jsonl", ("scores.json",))
    assert _merge(shards, tmp_path / "merged") == 2  # unfinished: refused
    assert not (tmp_path / "merged").exists()
    run_ok(SGR_RANDOM, shards[0], "--shard", "1/2")  # the same command resumes it
    assert _merge(shards, tmp_path / "merged") == 0
    assert folder_files(tmp_path / "merged") == folder_files(single)


def test_a_killed_seeker_shard_resumes_and_merges_to_the_single_run(tmp_path: Path) -> None:
    single = tmp_path / "single"
    run_ok(SEEKER, single)
    shards = _shards(SEEKER, tmp_path, 2)
    _killed(shards[1], "episodes.jsonl", ("summary.json",))
    run_ok(SEEKER, shards[1], "--shard", "2/2", "--jobs", "2")
    assert _merge(shards, tmp_path / "merged") == 0
    assert folder_files(tmp_path / "merged") == folder_files(single)


# --------------------------------------------------------------------------- refusals


@pytest.fixture(scope="module")
def seeker_shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The three finished shards of a small seeker run (read only: copy before changing)."""
    root = tmp_path_factory.mktemp("seeker-shards")
    return _shards([*SEEKER[:8], "--docs", *DOCS[:2], "--quiet"], root, 3)


def _refused(
    shards: list[Path], out: Path, capsys: pytest.CaptureFixture[str], *words: str
) -> None:
    before = out.exists() and sorted(out.iterdir())
    assert _merge(shards, out) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert (out.exists() and sorted(out.iterdir())) == before  # nothing written


def _copy(folder: Path, to: Path) -> Path:
    shutil.copytree(folder, to)
    return to


def test_a_missing_repeated_or_foreign_shard_is_refused(
    seeker_shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two, three = seeker_shards
    out = tmp_path / "merged"
    _refused([one, three], out, capsys, str(one), "2/3", "not given")
    _refused([one, two, two, three], out, capsys, str(two), "twice")
    again = _copy(two, tmp_path / "again")
    _refused([one, two, again, three], out, capsys, str(again), "2/3", "twice")
    # another run: another horizon
    other = [*SEEKER[:5], "2", *SEEKER[6:8], "--docs", *DOCS[:2], "--quiet"]
    foreign = tmp_path / "foreign"
    run_ok(other, foreign, "--shard", "2/3")
    _refused([one, foreign, three], out, capsys, str(foreign), "another run", "steps")
    # the same run in another environment (another package version)
    moved = _copy(two, tmp_path / "moved")
    card = json.loads((moved / "run.json").read_text("utf-8"))
    card["environment"]["packages"]["numpy"] = "0.0.0"
    (moved / "run.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n")
    _refused([one, moved, three], out, capsys, str(moved), "another run", "environment")
    # the shard of a split in two
    halves = _shards([*SEEKER[:8], "--docs", *DOCS[:2], "--quiet"], tmp_path / "halves", 2)
    _refused([one, halves[1], three], out, capsys, str(halves[1]), "split in 2")
    # an sgr shard among seeker shards
    sgr = tmp_path / "sgr"
    run_ok(SGR_ORACLE, sgr, "--shard", "2/3")
    _refused([one, sgr, three], out, capsys, str(sgr), "another run")


def test_an_unfinished_changed_or_unsharded_folder_is_refused(
    seeker_shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two, three = seeker_shards
    out = tmp_path / "merged"
    unfinished = _copy(two, tmp_path / "unfinished")
    (unfinished / COMPLETE).unlink()
    _refused([one, unfinished, three], out, capsys, str(unfinished), "did not finish")
    changed = _copy(two, tmp_path / "changed")
    with (changed / "episodes.jsonl").open("a") as f:
        f.write("{}\n")
    _refused([one, changed, three], out, capsys, str(changed), "changed since")
    single = tmp_path / "single"
    run_ok([*SEEKER[:8], "--docs", *DOCS[:2], "--quiet"], single)
    _refused([one, single, three], out, capsys, str(single), "not a shard")
    _refused([one, tmp_path / "nothing", three], out, capsys, "nothing", "not a run folder")


def test_an_out_that_holds_anything_is_refused(
    seeker_shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine\n")
    _refused(seeker_shards, full, capsys, str(full), "--out")
    a_file = tmp_path / "a-file"
    a_file.write_text("mine\n")
    assert _merge(seeker_shards, a_file) == 2
    assert str(a_file) in capsys.readouterr().err
    assert a_file.read_text() == "mine\n"
    inside = seeker_shards[0] / "merged"
    _refused(seeker_shards, inside, capsys, "inside the shard folder")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _merge(seeker_shards, empty) == 0  # a new or empty folder is fine
    capsys.readouterr()
    _refused(seeker_shards, empty, capsys, str(empty), "--out")  # a merged run is not replaced


def test_verify_run_checks_a_shard_and_a_merged_folder(
    seeker_shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for shard in seeker_shards:
        assert main(["verify-run", str(shard)]) == 0
    merged = tmp_path / "merged"
    assert _merge(seeker_shards, merged) == 0
    summary = json.loads((merged / "summary.json").read_text("utf-8"))
    summary["final_completeness"] += 0.125
    (merged / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    capsys.readouterr()
    assert main(["verify-run", str(merged)]) == 1
    assert "summary.json" in capsys.readouterr().out


# ------------------------------------------------------------------- the shard's run card


def test_the_card_records_the_shard_and_a_rerun_with_another_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "shard"
    run_ok(SGR_ORACLE, out, "--shard", "2/3")
    card = json.loads((out / "run.json").read_text("utf-8"))
    assert card["shard"] == {"index": 2, "count": 3}
    assert list(card)[-2:] == ["shard", "environment"]
    answered = [json.loads(line)["task_id"] for line in (out / "answers.jsonl").open()]
    single = tmp_path / "single"
    run_ok(SGR_ORACLE, single)
    assert "shard" not in json.loads((single / "run.json").read_text("utf-8"))
    every = [json.loads(line)["task_id"] for line in (single / "answers.jsonl").open()]
    assert answered == every[1::3]
    capsys.readouterr()
    before = folder_files(out)
    for argv in ([*SGR_ORACLE, "--shard", "1/3"], [*SGR_ORACLE, "--shard", "2/4"], SGR_ORACLE):
        assert main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "holds another run" in err and "shard" in err
    assert folder_files(out) == before
    assert main(["sgr", "compare", str(out)]) == 2  # one shard is not a run to rank
    assert "sgrgym merge" in capsys.readouterr().err


BAD_SHARDS = ["0/3", "4/3", "3", "1/0", "a/b", "-1/3", "1/3/5", "1/10001", "", " 1/3", "1.0/3"]


@pytest.mark.parametrize("value", BAD_SHARDS)
@pytest.mark.parametrize("command", [SGR_ORACLE[:4], SEEKER[:4]], ids=["sgr", "seeker"])
def test_a_bad_shard_is_refused_while_parsing(
    command: list[str], value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*command, f"--shard={value}", "--out", str(tmp_path / "out")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--shard" in err and "I/N" in err and "10,000" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_more_shards_than_episodes_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main([*SGR_ORACLE, "--shard", "6/6", "--out", str(out)]) == 2
    assert "5 task variant(s), fewer than 6 shards" in capsys.readouterr().err
    assert main([*SEEKER, "--shard", "7/7", "--out", str(out)]) == 2
    assert "6 episode(s), fewer than 7 shards" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_agent_that_runs_its_own_tasks_cannot_be_sharded(tmp_path: Path) -> None:
    from sgrgym.core.errors import UserError
    from sgrgym.sgr.make import SgrWorld
    from sgrgym.sgr.run import TaskRunner, run_agent

    class OwnTasks:
        name = "cli:own"

        def run_world(self, world: SgrWorld, out_dir: Path, *, progress: object, jobs: int):
            raise AssertionError("not to be run")

    agent = OwnTasks()
    assert isinstance(agent, TaskRunner)
    world = SgrWorld(env=None, files=[], tasks=[], references={})  # type: ignore[arg-type]
    with pytest.raises(UserError, match="cannot be sharded"):
        run_agent(world, agent, tmp_path / "out", seed=0, shard=Shard(1, 2))
    assert not (tmp_path / "out").exists()
