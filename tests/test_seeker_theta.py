"""θ selection (appendix A.2) on a small three-cluster corpus embedded with the pinned model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sgrgym.core.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "embeddings" / "models"
if not (MODELS / "all-MiniLM-L6-v2" / "model.onnx").is_file():
    pytest.skip("the ONNX model is not exported", allow_module_level=True)

from test_seeker_calibrate import DOCS  # noqa: E402

from sgrgym.seeker.corpus import Corpus, CorpusSource, corpus_sha256, make_document  # noqa: E402
from sgrgym.seeker.embed import OnnxMiniLM  # noqa: E402
from sgrgym.seeker.store import PassageRow, PassageStore, build_store  # noqa: E402
from sgrgym.seeker.theta import (  # noqa: E402
    choose,
    crossing_point,
    off_topic_probes,
    pin_theta,
    select_theta,
    targeted_probes,
)


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLM:
    return OnnxMiniLM(MODELS / "all-MiniLM-L6-v2", manifest_path=MODELS / "manifest.json")


@pytest.fixture(scope="module")
def clustered(
    tmp_path_factory: pytest.TempPathFactory, embedder: OnnxMiniLM
) -> tuple[Corpus, Path]:
    docs = tuple(
        make_document(name, name.title(), abstract, name, [(("Body",), t) for t in texts])
        for name, (abstract, texts) in DOCS.items()
    )  # one topic cluster per document
    corpus = Corpus(name="clustered", source=CorpusSource(kind="test"), documents=docs)
    rows = [PassageRow(d.id, p.id, "Body", p.order, p.text) for d in docs for p in d.passages]
    path = tmp_path_factory.mktemp("theta") / "clustered__minilm"
    build_store(path, corpus.name, corpus_sha256(corpus), rows, embedder.embed, embedder.model_id)
    return corpus, path


def test_probe_sets(clustered) -> None:  # type: ignore[no-untyped-def]
    corpus, _ = clustered
    off = off_topic_probes(corpus, 1)
    topics = {d.id: d.topic for d in corpus.documents}
    assert off and all(topics[p.source] != topics[p.doc_id] for p in off)
    assert off == off_topic_probes(corpus, 1)  # seeded
    target = targeted_probes(corpus)
    assert len(target) == sum(d.n_passages for d in corpus.documents)
    assert target[0].query.startswith("Body ") and target[0].source == "tea/p1"


def test_select_theta_balances_the_two_failures(clustered, embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    corpus, path = clustered
    store = PassageStore.open(path)
    evidence = select_theta(corpus, store, embedder, grid=[0.9, 0.2, 0.5], horizon=2)
    assert [p.theta for p in evidence.points] == evidence.grid == [0.2, 0.5, 0.9]
    hits = [p.off_topic_hit_rate for p in evidence.points]
    misses = [p.targeted_miss_rate for p in evidence.points]
    assert hits == sorted(hits, reverse=True) and misses == sorted(misses)
    assert hits[0] > hits[-1] and misses[-1] > misses[0]
    assert all(len(p.completeness_by_step) == 2 for p in evidence.points)
    finals = [p.final_completeness for p in evidence.points]
    assert finals == sorted(finals, reverse=True)
    assert evidence.chosen == choose(evidence.points) and evidence.chosen in evidence.grid
    assert evidence.crossing == crossing_point(evidence.points)
    assert evidence.paper_theta == 0.65 and evidence.model_id == embedder.model_id
    assert len(evidence.robustness) == 4
    again = select_theta(corpus, store, embedder, grid=[0.2, 0.5, 0.9], horizon=2)
    assert again == evidence
    # Pinning: the manifest takes the chosen θ and the evidence's sha256; opening verifies it.
    copy = tmp_path / "store"
    shutil.copytree(path, copy)
    selection = pin_theta(copy, evidence)
    pinned = PassageStore.open(copy)
    assert pinned.manifest.theta == evidence.chosen
    assert pinned.manifest.theta_selection == selection
    assert json.loads((copy / "theta-selection.json").read_text())["chosen"] == evidence.chosen
    (copy / "theta-selection.json").write_text("{}\n")
    with pytest.raises(UserError, match="does not match the manifest"):
        PassageStore.open(copy)
    (copy / "theta-selection.json").unlink()
    with pytest.raises(UserError, match="evidence the manifest pins is missing"):
        PassageStore.open(copy)
    with pytest.raises(UserError, match="one topic cluster"):
        single = Corpus(name="one", source=corpus.source, documents=corpus.documents[:1])
        select_theta(single, store, embedder, grid=[0.5])


def test_cli_select_theta_and_run_say_which_theta(clustered, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from sgrgym.cli import main
    from sgrgym.seeker.corpus import save_corpus

    corpus, path = clustered
    store = tmp_path / "store"
    shutil.copytree(path, store)
    corpus_file = tmp_path / "c.jsonl"
    save_corpus(corpus, corpus_file)
    common = [
        "--corpus",
        "clustered",
        "--corpus-file",
        str(corpus_file),
        "--store",
        str(store),
        "--steps",
        "2",
        "--quiet",
    ]
    assert main(["seeker", "select-theta", *common, "--grid", "0.3", "0.6", "--pin", "--json"]) == 0
    evidence = json.loads(capsys.readouterr().out)
    assert PassageStore.open(store).manifest.theta == evidence["chosen"]
    check = ["seeker", "select-theta", *common, "--check"]
    assert main([*check, "--grid", "0.3", "0.6"]) == 0
    assert "reproduce" in capsys.readouterr().out
    assert main([*check, "--grid", "0.3", "0.5"]) == 2
    assert "differs from the pinned one" in capsys.readouterr().err
    assert main(["seeker", "run", *common, "--out", str(tmp_path / "r"), "--json"]) == 0
    pinned = json.loads(capsys.readouterr().out)
    assert "the store's pinned θ (selected by select-theta" in pinned["theta_note"]
    assert (
        main(["seeker", "run", *common, "--theta", "0.65", "--out", str(tmp_path / "o"), "--json"])
        == 0
    )
    override = json.loads(capsys.readouterr().out)
    assert override["theta"] == 0.65 and "overrides the store's pinned" in override["theta_note"]
    assert (
        main(
            [
                "seeker",
                "sweep-theta",
                *common,
                "--thetas",
                "0.3",
                "0.65",
                "--out",
                str(tmp_path / "s"),
                "--json",
            ]
        )
        == 0
    )
    sweep = json.loads(capsys.readouterr().out)
    assert set(sweep["completeness_by_step"]) == {"0.30", "0.65"}
    assert all(len(curve) == 2 for curve in sweep["completeness_by_step"].values())


def test_the_demo_store_pins_its_selected_theta() -> None:
    folder = ROOT / "embeddings" / "djangodocs__minilm-l6-onnx"
    store = PassageStore.open(folder)  # verifies the evidence's sha256
    evidence = json.loads((folder / "theta-selection.json").read_text())
    assert store.manifest.theta == evidence["chosen"] == 0.55
    assert store.manifest.theta_selection is not None
    assert store.manifest.theta_selection.paper_theta == evidence["paper_theta"] == 0.65
    assert evidence["model_id"] == store.manifest.model_id
    assert evidence["vectors_sha256"] == store.manifest.vectors_sha256
    assert 0.65 in evidence["grid"] and evidence["paper_grid"] == [0.6, 0.65, 0.7]
