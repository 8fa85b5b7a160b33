"""The committed Qwen2.5-Coder-0.5B baseline replays offline, byte for byte.

``baselines/qwen2.5-coder-0.5b/`` holds a real recording of the pinned local model (served by
``sgrgym llm serve``): the compressed chat cache and the result files of an SGR run and three
SeekerGym runs. Here every pin is checked, the cache is unpacked into a scratch folder and
every run is replayed with ``--llm-mode replay`` while every socket connection is refused (no
server runs; the network guard of conftest is on too), and the results must equal the
committed ones exactly.
"""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sgrgym.cli import main, run_command
from sgrgym.core.errors import PinError, UserError
from sgrgym.llm.localfiles import load_manifest
from sgrgym.seeker.embed import OnnxRunner, embedder_id
from sgrgym.suite.baseline import command, load, replay, unpack_cache, verify

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "baselines" / "qwen2.5-coder-0.5b"
MODEL_ONNX = ROOT / "embeddings" / "models" / "all-MiniLM-L6-v2" / "model.onnx"
CORPUS = ROOT / "tasks" / "seeker" / "djangodocs" / "corpus.jsonl"


def refuse_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a connection was attempted to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def test_manifest_pins_every_file_and_names_the_pinned_model() -> None:
    manifest = verify(BASELINE)
    local = load_manifest()
    model = local.model(manifest.model.name)
    assert manifest.model.gguf == model.file
    assert manifest.model.gguf_sha256 == model.sha256
    assert manifest.server.build in local.servers
    names = {run.name for run in manifest.runs}
    assert names == {"sgr", "seeker-dedup", "seeker-trajectory", "seeker-oracle"}
    for run in manifest.runs:
        card = json.loads((BASELINE / run.name / "run.json").read_text("utf-8"))
        assert "local:qwen2.5-coder-0.5b" in json.dumps(card)
    assert (BASELINE / manifest.cache.file).stat().st_size < 5_000_000


def perturb_embeddings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the ONNX embedder move every vector by about 1e-6, as another processor's kernels
    do (measured: 1e-7 to 1e-6); returns a list that counts the texts it embeds."""
    embedded: list[int] = []
    original = OnnxRunner.embed

    def perturbed(self: OnnxRunner, texts: Any, dims: int) -> Any:
        embedded.append(len(texts))
        vectors = original(self, texts, dims)
        noise = np.random.default_rng(len(embedded)).normal(0.0, 1e-6, vectors.shape)
        return (vectors + noise).astype(np.float32)

    monkeypatch.setattr(OnnxRunner, "embed", perturbed)
    return embedded


def test_replay_is_byte_identical_without_a_server_on_other_kernels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What another processor changes (the embedder's last bits) cannot change a replay: the
    query vectors come from the recording and no text is embedded."""
    if not (MODEL_ONNX.is_file() and CORPUS.is_file()):
        pytest.skip("the demo corpus or the MiniLM model is not built (setup/test builds them)")
    monkeypatch.chdir(ROOT)  # the recorded commands' task paths are relative to the root
    refuse_connections(monkeypatch)
    embedded = perturb_embeddings(monkeypatch)
    replays = replay(BASELINE, tmp_path / "out", run_command)
    assert embedded == []
    assert [r.name for r in replays] == [run.name for run in load(BASELINE).runs]
    assert all(r.differing == () for r in replays), [(r.name, r.differing) for r in replays]
    for run in load(BASELINE).runs:
        log = json.loads((tmp_path / "out" / run.name / "llm_run.json").read_text("utf-8"))
        assert log["mode"] == "replay" and log["network_attempts"] == 0
        assert log["calls"] == log["from_cache"] > 0


def test_a_changed_file_is_named(tmp_path: Path) -> None:
    copy = tmp_path / "baseline"
    shutil.copytree(BASELINE, copy)
    scores = copy / "sgr" / "scores.json"
    scores.write_text(scores.read_text("utf-8") + " ", "utf-8")
    with pytest.raises(PinError, match=r"sgr/scores\.json: sha256 [0-9a-f]{64} differs"):
        verify(copy)
    (copy / "notes.txt").write_text("x", "utf-8")
    with pytest.raises(UserError, match=r"not pinned in manifest\.json: notes\.txt"):
        verify(copy)


def test_replay_baseline_command_refuses_an_existing_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sgr").mkdir()
    code = main(["llm", "replay-baseline", str(BASELINE), "--out", str(tmp_path)])
    assert code == 2
    assert "sgr already exist" in capsys.readouterr().err


def test_a_bad_manifest_field_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "baseline"
    shutil.copytree(BASELINE, copy)
    manifest = json.loads((copy / "manifest.json").read_text("utf-8"))
    manifest["model"]["gguf_sha256"] = "not-a-hash"
    (copy / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    code = main(["llm", "replay-baseline", str(copy), "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{copy / 'manifest.json'}: field model.gguf_sha256" in err
    assert not (tmp_path / "out").exists()


def test_the_recording_holds_every_query_vector_and_a_missing_one_is_a_replay_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The query vectors sit beside the model calls, keyed by the pinned embedder and the exact
    text; a replay that needs one the recording lacks stops with exit 2 and names it."""
    if not CORPUS.is_file():
        pytest.skip("the demo corpus is not built (setup/test builds it)")
    manifest = verify(BASELINE)
    cache = unpack_cache(BASELINE, manifest, tmp_path)
    model_id, _ = embedder_id("minilm-l6-onnx", ROOT / "embeddings" / "models")
    db = sqlite3.connect(cache)
    recorded = db.execute("SELECT model_id, text FROM query_vectors").fetchall()
    assert {m for m, _ in recorded} == {model_id}
    queries: dict[str, set[str]] = {}
    for run in manifest.runs:
        if run.name.startswith("seeker-"):
            lines = (BASELINE / run.name / "episodes.jsonl").read_text("utf-8").splitlines()
            queries[run.name] = {
                q for line in lines for step in json.loads(line)["steps"] for q in step["queries"]
            }
    assert set().union(*queries.values()) == {text for _, text in recorded}
    gone = sorted(queries["seeker-dedup"])[0]
    with db:
        db.execute("DELETE FROM query_vectors WHERE text = ?", (gone,))
    db.close()
    monkeypatch.chdir(ROOT)
    refuse_connections(monkeypatch)
    embedded = perturb_embeddings(monkeypatch)
    run = next(r for r in manifest.runs if r.name == "seeker-dedup")
    assert main(command(run, cache, tmp_path / "out", "replay")) == 2
    err = capsys.readouterr().err
    assert "embedding not in the recording" in err and repr(gone[:60]) in err
    assert embedded == []
