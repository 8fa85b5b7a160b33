"""``sgrgym run`` / ``verify-run`` / ``report``: config errors, resume after kill -9 at random
points with byte-identical results, refusal of another run's folder, every flipped byte in a
record or result caught, a report whose every figure exists and renders."""

from __future__ import annotations

import html
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.runs.folder import COMPLETE
from sgrgym.seeker.paths import corpus_path
from sgrgym.suite.config import DEFAULT_CONFIG_TOML, load_config, parse_config
from sgrgym.suite.layout import VOLATILE

ROOT = Path(__file__).resolve().parents[1]


def _small_config(path: Path) -> Path:
    """Three documents, two agents × three beliefs × two seeds, two estimators, two SGR agents
    on two task files: every part of the run, small."""
    docs = []
    with corpus_path("demo").open(encoding="utf-8") as f:
        next(f)  # the corpus header
        for line in f:
            docs.append(json.loads(line)["id"])
            if len(docs) == 3:
                break
    path.write_text(
        f"""
[seeker]
agents = ["sentences", "oracle-text"]
seeds = 2
steps = 3
docs = {json.dumps(docs)}

[calibration]
estimators = ["constant", "visible-count"]
splits = 2
seeds = 2
stopping = false

[sgr]
agents = ["oracle", "random"]
tasks = ["tasks/sgr/cwe/constraint.jsonl", "tasks/sgr/elements/goal.jsonl"]
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(config, a finished run folder of it)."""
    base = tmp_path_factory.mktemp("run")
    config = _small_config(base / "small.toml")
    out = base / "clean"
    assert main(["run", "--out", str(out), "--config", str(config), "--quiet"]) == 0
    return config, out


def _results(out: Path) -> dict[str, bytes]:
    """Every file of the folder but locks and wall-clock timings; the top completion marker
    by its deterministic part."""
    found = {}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if not p.is_file() or p.name == ".lock" or p.name in VOLATILE:
            continue
        data = p.read_bytes()
        if rel == COMPLETE:
            data = json.dumps(json.loads(data)["files"], sort_keys=True).encode()
        found[rel] = data
    return found


# ------------------------------------------------------------------------------ config


def run_process_argv(config: Path, out: Path) -> list[str]:
    """``sgrgym run`` of ``config`` into ``out`` as its own Python process."""
    return [
        sys.executable,
        "-m",
        "sgrgym",
        "run",
        "--out",
        str(out),
        "--config",
        str(config),
        "--quiet",
    ]


def test_default_config_is_the_embedded_one() -> None:
    config = load_config(None)
    assert config == parse_config(DEFAULT_CONFIG_TOML, "x")
    assert config.seeker.beliefs == ["trajectory", "dedup", "oracle"]
    assert config.sgr.agents == ["oracle", "default", "search-only", "random"]
    assert config.calibration.splits == 3 and config.calibration.seeds == 10  # section 3.3
    assert len(config.sha256()) == 64


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[seeker]\nseedz = 3\n", "seeker.seedz"),
        ("[seeker]\nseeds = 0\n", "seeker.seeds"),
        ("[sgr]\nagents = 3\n", "sgr.agents"),
        ("[benchmarks]\nx = 1\n", "benchmarks"),
        ("[seeker\n", "not valid TOML"),
    ],
)
def test_bad_config_names_the_key(text: str, named: str) -> None:
    with pytest.raises(UserError, match=re.escape(named)):
        parse_config(text, "my.toml")


def test_unknown_agent_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[sgr]\nagents = ["oracle", "no-such-agent"]\n')
    assert main(["run", "--out", str(tmp_path / "out"), "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "sgr.agents" in err and "no-such-agent" in err and "Traceback" not in err
    assert main(["run", "--out", str(tmp_path / "o2"), "--agent", "nobody"]) == 2
    assert "nobody" in capsys.readouterr().err


# ------------------------------------------------------------------------------ the run


def test_run_folder_card_and_verify(small: tuple[Path, Path]) -> None:
    _config, out = small
    card = json.loads((out / "run.json").read_text())
    assert card["kind"] == "sgrgym run" and len(card["config_sha256"]) == 64
    env = card["environment"]
    assert env["packages"]["numpy"] and env["python"] and env["sgrgym_version"]
    assert env["git_commit"] is None or len(env["git_commit"]) == 40
    labels = set(card["manifests"])
    assert {
        "corpus",
        "passage store manifest",
        "embedding models manifest",
        "pack manifest",
    } <= labels
    assert any(label.startswith("task file") for label in labels)
    assert any(label.startswith("prompt:") for label in labels)
    for part in ("seeker/sentences__dedup", "calibration", "sgr/oracle"):
        assert (out / part / COMPLETE).is_file()
        assert "environment" in json.loads((out / part / "run.json").read_text())
    rows = json.loads((out / "results" / "sgr.json").read_text())["rows"]
    assert [r["agent"] for r in rows] == ["oracle", "random"]
    assert rows[0]["overall"]["item_f1"] == 1.0  # the oracle validates the pack
    assert main(["verify-run", str(out)]) == 0


def test_other_run_in_the_folder_is_refused(
    small: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, out = small
    other = tmp_path / "other.toml"
    other.write_text(config.read_text().replace("seeds = 2\nsteps = 3", "seeds = 1\nsteps = 3"))
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    capsys.readouterr()
    assert main(["run", "--out", str(copy), "--config", str(other), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "holds another run" in err and "config" in err
    assert (copy / COMPLETE).is_file()  # untouched


def _flip(path: Path, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    i = rng.randrange(len(data))
    data[i] ^= 1 << rng.randrange(7)
    path.write_bytes(bytes(data))


def test_verify_run_catches_a_flipped_byte_in_every_record_and_result(
    small: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = small
    targets = [
        p.relative_to(out) for p in sorted(out.rglob("*")) if p.is_file() and p.name != ".lock"
    ]
    record_files = [t for t in targets if t.suffix in (".jsonl", ".json")]
    assert len(record_files) > 20
    rng = random.Random(13)
    others = [t for t in targets if t not in record_files]  # figures, pages, tables
    assert others
    for target in [*record_files, *rng.sample(others, min(6, len(others)))]:
        copy = tmp_path / "flip"
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(out, copy)
        _flip(copy / target, rng)
        capsys.readouterr()
        code = main(["verify-run", str(copy)])
        output = capsys.readouterr()
        assert code != 0, target
        assert str(target.name) in output.out + output.err, target


def test_run_killed_at_random_points_resumes_byte_identical(
    small: tuple[Path, Path], tmp_path: Path
) -> None:
    config, clean = small
    out = tmp_path / "killed"
    argv = run_process_argv(config, out)
    rng = random.Random(7)
    killed = 0
    for _ in range(3):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while proc.poll() is None and not (out / "run.json").is_file():
            time.sleep(0.05)
        time.sleep(rng.uniform(0.5, 12.0))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed += 1
            proc.communicate()
            if (out / COMPLETE).exists():  # killed after its last write, while exiting
                assert main(["verify-run", str(out)]) == 0
        else:
            _, err = proc.communicate()
            assert proc.returncode == 0, err
    assert killed >= 1
    assert main(["run", "--out", str(out), "--config", str(config), "--quiet"]) == 0
    assert _results(out) == _results(clean)
    for part in ("sgr/oracle", "sgr/random"):
        ids = [
            json.loads(line)["task_id"]
            for line in (out / part / "answers.jsonl").read_text().splitlines()
        ]
        assert len(ids) == len(set(ids))
    assert main(["verify-run", str(out)]) == 0


# ------------------------------------------------------------------------------ the report


def _targets(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return re.findall(r'<(?:img|object)[^>]+(?:src|data)="([^"]+)"', text)


def test_report_every_image_target_exists_and_is_deterministic(
    small: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = small
    index = out / "report" / "index.html"
    targets = _targets(index)
    assert len(targets) >= 10
    for target in targets:
        assert (index.parent / target).is_file(), target
        assert (index.parent / target).read_bytes().startswith(b"<?xml")
    pages = sorted((out / "report" / "tasks").glob("*.html"))
    assert pages and f"tasks/{pages[0].name}" in index.read_text()
    assert "no LLM runs" in index.read_text()
    markdown = (out / "report" / "report.md").read_text()
    bins = ["1-2 rows", "3-5 rows", "6-10 rows", "11+ rows"]
    positions = [markdown.find(b) for b in bins]
    assert -1 not in positions and positions == sorted(positions)  # appendix K's order
    assert "among each agent's failed episodes" in markdown
    again = tmp_path / "again"
    assert main(["report", str(out), "--out", str(again)]) == 0
    for p in sorted((out / "report").rglob("*")):
        if p.is_file():
            assert (again / p.relative_to(out / "report")).read_bytes() == p.read_bytes(), p


def test_report_of_several_runs_side_by_side(small: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = small
    second = tmp_path / "second"
    shutil.copytree(out, second)
    report = tmp_path / "both"
    assert main(["report", str(out), str(second), "--out", str(report)]) == 0
    text = (report / "index.html").read_text()
    assert "clean" in text and "second" in text
    assert "not over the same task variants" not in text
    for target in _targets(report / "index.html"):
        assert (report / target).is_file(), target
    # A run over fewer tasks is said to be so, not put beside the others without a word.
    results = second / "results" / "sgr.json"
    data = json.loads(results.read_text())
    data["rows"][0]["overall"]["n"] = 3
    results.write_text(json.dumps(data))
    assert main(["report", str(out), str(second), "--out", str(report)]) == 0
    text = (report / "index.html").read_text()
    assert "not over the same task variants" in text and "second/oracle: 3" in text


def test_a_task_page_reads_as_task_reference_answer_and_comparison(
    small: tuple[Path, Path],
) -> None:
    _, out = small
    task = json.loads(Path("tasks/sgr/cwe/constraint.jsonl").read_text().splitlines()[0])
    page = (out / "report" / "tasks" / f"{task['task_id']}.html").read_text(encoding="utf-8")
    assert 'href="../index.html"' in page  # a way back
    assert html.escape(task["instruction"]) in page
    assert "Reference answer" in page and "Answer as given" in page
    gold = task["oracle_answer"].splitlines()[0].split("|")
    assert all(f"<td>{html.escape(v)}</td>" in page for v in gold)
    assert "Compared with the reference" in page and "✓" in page and "✗" in page
    cells = re.findall(r"<td>([^<]*)</td>", page)
    assert not {"None", "True", "False"} & set(cells)  # values read as words, not Python
    markdown = (out / "report" / "tasks" / f"{task['task_id']}.md").read_text(encoding="utf-8")
    assert "[← back to the report](../report.md)" in markdown


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install -y "
    "chromium): the headless rendering check needs it",
)
def test_report_renders_in_headless_chromium(small: tuple[Path, Path], tmp_path: Path) -> None:
    """Every figure loads: the page's own script lists images that failed to decode."""
    _, out = small
    index = out / "report" / "index.html"
    probe = tmp_path / "probe.html"
    html = index.read_text(encoding="utf-8").replace('src="', f'src="{index.parent.as_uri()}/')
    script = (
        "<script>window.addEventListener('load',()=>{const bad=[...document.images]"
        ".filter(i=>!i.complete||i.naturalWidth===0).map(i=>i.src);"
        "document.body.setAttribute('data-images',document.images.length);"
        "document.body.setAttribute('data-broken',JSON.stringify(bad));});</script>"
    )
    probe.write_text(html.replace("</body>", script + "</body>"), encoding="utf-8")
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            "--virtual-time-budget=10000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    images = re.search(r'data-images="(\d+)"', done.stdout)
    broken = re.search(r'data-broken="([^"]*)"', done.stdout)
    assert images and broken, done.stdout[-2000:]
    assert int(images.group(1)) == len(_targets(index)) >= 10
    assert json.loads(broken.group(1).replace("&quot;", '"')) == []


def test_verify_and_report_refuse_folders_that_are_not_finished_runs(
    small: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = small
    unfinished = tmp_path / "unfinished"
    shutil.copytree(out, unfinished)
    (unfinished / COMPLETE).unlink()
    assert main(["verify-run", str(unfinished)]) == 2
    assert "did not finish" in capsys.readouterr().err
    part = out / "sgr" / "oracle"  # a run folder, but not a sgrgym run
    assert main(["report", str(part), "--out", str(tmp_path / "rep")]) == 2
    assert "not a sgrgym run folder" in capsys.readouterr().err
    assert main(["report", str(out), str(out)]) == 2
    assert "--out" in capsys.readouterr().err


def test_frontier_is_drawn_when_episodes_carry_token_counts(
    small: tuple[Path, Path], tmp_path: Path
) -> None:
    from sgrgym.suite.report.html import write_report
    from sgrgym.suite.results import card_config, write_results

    _, out = small
    llm = tmp_path / "llm"
    shutil.copytree(out, llm)
    for episodes in sorted((llm / "seeker").glob("*/episodes.jsonl")):
        lines = [json.loads(line) for line in episodes.read_text().splitlines()]
        for n, e in enumerate(lines):
            totals = {
                "calls": 1,
                "prompt_tokens": 100 + n,
                "completion_tokens": 10,
                "cost_usd": 0.001,
                "unpriced_calls": 0,
            }
            e["llm"] = {"totals": totals}  # an LLM agent's episode record
        episodes.write_text("".join(json.dumps(e) + "\n" for e in lines))
    write_results(llm, card_config(llm))
    rows = json.loads((llm / "results" / "seeker.json").read_text())["rows"]
    assert all(r["tokens_per_episode"] and r["tokens_per_episode"] > 110 for r in rows)
    assert all(r["cost_usd_per_episode"] == 0.001 for r in rows)
    index = write_report([llm], tmp_path / "report")
    assert (tmp_path / "report" / "figures" / "seeker-frontier.svg").is_file()
    assert "no LLM runs" not in index.read_text()


def test_variance_decomposition_on_tiny_data_says_so_and_never_raises() -> None:
    from sgrgym.suite.report.variance import decompose

    one = [{"agent": "a", "belief": "b", "doc_id": "d", "final_completeness": 0.5}]
    assert decompose(one).notes and not decompose(one).factors
    tiny = [
        {"agent": a, "belief": "b", "doc_id": d, "final_completeness": c}
        for a, d, c in (("a", "d1", 0.2), ("b", "d1", 0.2), ("a", "d2", 0.9), ("b", "d2", 0.9))
    ]
    result = decompose(tiny)
    assert result.observations == 4 and result.notes  # no residual variance: said so
    assert "the belief factor does not vary here (one belief): it has no row" in result.notes


def test_belief_blind_agents_are_found_from_their_episodes() -> None:
    from sgrgym.suite.report.html import belief_blind

    def episode(doc: str, seed: int, retrieved: list[str]) -> dict[str, object]:
        return {"doc_id": doc, "seed": seed, "retrieved": retrieved}

    same = [episode("d", 0, ["p1", "p2"]), episode("d", 1, ["p3"])]
    episodes = {
        ("abstract-only", "dedup"): same,
        ("abstract-only", "oracle"): same,
        ("reader", "dedup"): same,
        ("reader", "oracle"): [episode("d", 0, ["p1", "p4"]), episode("d", 1, ["p3"])],
        ("one-belief", "dedup"): same,
    }
    assert belief_blind(episodes) == ["abstract-only"]


def test_an_llm_table_runs_both_llm_agents_and_replays_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket
    from typing import Any

    from chat_server import scripted

    from sgrgym.core.loopback import serve_http

    def script(body: dict[str, Any]) -> Any:
        if body.get("tools"):  # the SGR agent: one final answer, no tool call
            return "```\nanswer|1\n```"
        return "Query: how to configure settings\nQuery: database models"  # SeekerGym

    first = next(iter(corpus_path("demo").open(encoding="utf-8").readlines()[1:2]))
    doc = json.loads(first)["id"]
    line = (ROOT / "tasks" / "sgr" / "cwe" / "constraint.jsonl").read_text("utf-8").splitlines()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(line[0] + "\n", "utf-8")

    def config(url: str) -> Path:
        path = tmp_path / "llm.toml"
        path.write_text(
            f"""
[seeker]
agents = []
seeds = 1
steps = 2
docs = ["{doc}"]

[calibration]
enabled = false

[sgr]
agents = []
tasks = ["{tasks}"]

[llm]
model = "tiny"
base_url = "{url}/v1"
cache = "{tmp_path / "calls.sqlite"}"
mode = "{"record" if url != "http://127.0.0.1:9" else "replay"}"
""",
            encoding="utf-8",
        )
        return path

    handler = scripted(script)
    with serve_http(handler) as url:
        assert (
            main(
                [
                    "run",
                    "--out",
                    str(tmp_path / "rec"),
                    "--config",
                    str(config(url)),
                    "--quiet",
                    "--no-report",
                ]
            )
            == 0
        )
    assert handler.received
    recorded_url = url

    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a connection was attempted to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    text = config(recorded_url).read_text("utf-8").replace('mode = "record"', 'mode = "replay"')
    config(recorded_url).write_text(text, "utf-8")
    assert (
        main(
            [
                "run",
                "--out",
                str(tmp_path / "rep"),
                "--config",
                str(tmp_path / "llm.toml"),
                "--quiet",
                "--no-report",
            ]
        )
        == 0
    )
    rec, rep = _results(tmp_path / "rec"), _results(tmp_path / "rep")
    assert rec == rep
    assert {
        "seeker/llm__trajectory/summary.json",
        "seeker/llm__oracle/episodes.jsonl",
        "sgr/llm/scores.json",
        "sgr/llm/llm_totals.json",
    } <= set(rec)
    assert json.loads((tmp_path / "rep" / "sgr" / "llm" / "llm_run.json").read_text())
    assert main(["verify-run", str(tmp_path / "rep")]) == 0


def test_sigterm_removes_the_scratch_folder_and_the_run_resumes(tmp_path: Path) -> None:
    """SIGTERM stops `sgrgym run` as Ctrl-C does: exit 143, its scratch folder (the shared
    query cache) removed, the run folder resumable."""
    config = _small_config(tmp_path / "small.toml")
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    out = tmp_path / "out"
    proc = subprocess.Popen(
        run_process_argv(config, out),
        env={**os.environ, "TMPDIR": str(scratch_root)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not (out / "seeker").is_dir() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(scratch_root.glob("sgrgym-run-*")), "the run started with its scratch folder"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert b"stopped by SIGTERM" in err and b"Traceback" not in err
    assert list(scratch_root.iterdir()) == []
    assert main(run_process_argv(config, out)[3:]) == 0  # resumed in this process
