"""SeekerGym episodes on a tiny corpus embedded with the real pinned ONNX model.

Needs the built model (``sgrgym seeker build-model``, done at set-up); the store is
built here from sentences written for the test.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sgrgym.core.errors import UserError
from sgrgym.seeker.agents import OracleTextAgent, PhrasesAgent, SentencesAgent
from sgrgym.seeker.belief import belief_renderer
from sgrgym.seeker.corpus import Corpus, CorpusSource, corpus_sha256, make_document
from sgrgym.seeker.env import SeekerEnv
from sgrgym.seeker.run import run_seeker
from sgrgym.seeker.store import PassageRow, PassageStore, build_store

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "embeddings" / "models"
if not (MODELS / "all-MiniLM-L6-v2" / "model.onnx").is_file():
    pytest.skip("the ONNX model is not built (sgrgym seeker build-model)", allow_module_level=True)

from sgrgym.seeker.embed import OnnxMiniLM  # noqa: E402

PASSAGES = [
    (
        ("Brewing",),
        "Green tea leaves are steamed or pan-fired soon after picking to stop oxidation.",
    ),
    (("Brewing",), "Water just below boiling keeps green tea from turning bitter."),
    (("Brewing",), "Black tea is fully oxidised before drying, which darkens the leaves."),
    (("Growing",), "Tea bushes grow best on acidic soil with steady rainfall."),
    (("Growing",), "Highland plantations produce slower-growing leaves with more aroma."),
    (("Trade",), "Clipper ships raced to carry the first tea of the season to London."),
]


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLM:
    return OnnxMiniLM(MODELS / "all-MiniLM-L6-v2", manifest_path=MODELS / "manifest.json")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxMiniLM) -> tuple[Corpus, Path]:
    doc = make_document(
        "tea",
        "Tea",
        "How tea is grown, processed and brewed, and how it was traded.",
        "food",
        PASSAGES,
    )
    corpus = Corpus(name="tiny", source=CorpusSource(kind="test"), documents=(doc,))
    rows = [PassageRow(doc.id, p.id, " > ".join(p.section), p.order, p.text) for p in doc.passages]
    path = tmp_path_factory.mktemp("store") / "tiny__minilm"
    build_store(path, "tiny", corpus_sha256(corpus), rows, embedder.embed, embedder.model_id)
    return corpus, path


def env_for(
    tiny: tuple[Corpus, Path], embedder: OnnxMiniLM, horizon: int = 3, budget: int = 2
) -> SeekerEnv:
    corpus, path = tiny
    store = PassageStore.open(path)
    return SeekerEnv(corpus, store, embedder.embed, None, horizon, queries_per_step=budget)


def test_oracle_text_reaches_full_completeness(tiny, embedder) -> None:  # type: ignore[no-untyped-def]
    env = env_for(tiny, embedder, horizon=2, budget=len(PASSAGES))
    env.reset("tea", seed=0)
    first = env.step([text for _, text in PASSAGES])
    assert first.completeness == 1.0 and not first.done and first.reward == 0.0
    assert [p.id for p in first.new_passages] == [f"p{i}" for i in range(1, 7)]
    last = env.step([])
    assert last.done and last.reward == 1.0 and last.new_passages == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step(["more"])


def test_retrieval_is_per_query_monotone_and_thresholded(tiny, embedder) -> None:  # type: ignore[no-untyped-def]
    env = env_for(tiny, embedder)
    env.reset("tea")
    result = env.step(["brewing green tea with hot water", "ships carrying tea to London"])
    assert "p2" in result.per_query[0] and result.per_query[1] == ["p6"]
    before = list(env.state.retrieved)  # type: ignore[union-attr]
    again = env.step(["brewing green tea with hot water"])
    assert again.new_passages == [] and env.state.retrieved == before  # type: ignore[union-attr]
    strict = SeekerEnv(env.corpus, env.store, embedder.embed, theta=0.999, horizon=1)
    strict.reset("tea")
    assert strict.step(["completely unrelated text about volcanoes"]).completeness == 0.0


def test_beliefs(tiny, embedder) -> None:  # type: ignore[no-untyped-def]
    env = env_for(tiny, embedder)
    env.reset("tea")
    env.step(["ships carrying tea to London", "ships carrying tea to London"])
    state = env.state
    assert state is not None
    trajectory = belief_renderer("trajectory")(state)
    clipper = next(p.text for p in state.document.passages if p.id == "p6")
    number = state.retrieved.index("p6") + 1  # numbered in retrieval order, not by position
    assert trajectory.count(f"[{number}] {clipper}") == 2  # repeats are kept verbatim
    dedup = belief_renderer("dedup")(state)
    assert dedup.count(f"[{number}] {clipper}") == 1
    assert "[p" not in trajectory and "[p" not in dedup  # positions only in the oracle belief
    oracle = belief_renderer("oracle")(state)
    assert "<missing id=p1>" in oracle and "[p6] Clipper ships" in oracle
    assert "# Trade" in oracle
    with pytest.raises(UserError, match="no belief"):
        belief_renderer("telepathy")


def test_runs_are_byte_identical_and_baselines_are_honest(
    tiny,
    embedder,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    for name in ("a", "b"):
        run_seeker(
            env_for(tiny, embedder),
            SentencesAgent(per_step=1),
            render=belief_renderer("dedup"),
            belief="dedup",
            doc_ids=["tea"],
            seeds=2,
            out_dir=tmp_path / name,
        )
    for file in ("episodes.jsonl", "summary.json"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["episodes"] == 2 and len(summary["completeness_by_step"]) == 3
    assert summary["completeness_by_step"] == sorted(summary["completeness_by_step"])
    oracle = run_seeker(
        env_for(tiny, embedder, 1, budget=len(PASSAGES)),  # a budget for every passage at once
        OracleTextAgent(per_step=len(PASSAGES)),
        render=belief_renderer("oracle"),
        belief="oracle",
        doc_ids=["tea"],
        seeds=1,
        out_dir=tmp_path / "oracle",
    )
    assert oracle.final_completeness == 1.0
    phrases = run_seeker(
        env_for(tiny, embedder),
        PhrasesAgent(per_step=2),
        render=belief_renderer("trajectory"),
        belief="trajectory",
        doc_ids=["tea"],
        seeds=1,
        out_dir=tmp_path / "phrases",
    )
    assert phrases.final_completeness < 1.0


def test_embeddings_agree_across_processes(embedder) -> None:  # type: ignore[no-untyped-def]
    code = (
        "import sys; from pathlib import Path; from sgrgym.seeker.embed import OnnxMiniLM\n"
        f"m = OnnxMiniLM(Path({str(MODELS / 'all-MiniLM-L6-v2')!r}), "
        f"manifest_path=Path({str(MODELS / 'manifest.json')!r}))\n"
        "sys.stdout.buffer.write(m.embed(['steeping time for oolong']).tobytes())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    mine = embedder.embed(["steeping time for oolong"]).tobytes()
    assert other == mine


def test_tampered_store_and_mismatches(tiny, embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    corpus, path = tiny
    copy = tmp_path / "store"
    shutil.copytree(path, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["vectors_sha256"] = "0" * 64
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match="do not match the manifest"):
        PassageStore.open(copy)
    other = Corpus(name="other", source=CorpusSource(kind="test"), documents=corpus.documents)
    with pytest.raises(UserError, match="was built for corpus 'tiny'"):
        SeekerEnv(other, PassageStore.open(path), embedder.embed)
    env = env_for(tiny, embedder)
    with pytest.raises(UserError, match="no document 'coffee'"):
        env.reset("coffee")


def test_lancedb_search_agrees_with_the_matrix(tiny, embedder) -> None:  # type: ignore[no-untyped-def]
    env = env_for(tiny, embedder)
    env.reset("tea")
    query = "green tea brewing temperature"
    result = env.step([query])
    vector = embedder.embed([query])[0]
    assert env.store.search_lancedb("tea", vector, env.theta) == sorted(result.per_query[0])
    assert np.isclose(np.linalg.norm(vector), 1.0, atol=1e-6)


def test_demo_store_matches_the_demo_corpus(embedder: OnnxMiniLM, tmp_path: Path) -> None:
    from sgrgym.seeker.corpus import load_corpus

    corpus_file = ROOT / "tasks" / "seeker" / "djangodocs" / "corpus.jsonl"
    if not corpus_file.is_file():
        pytest.skip("the demo corpus is not built (sgrgym seeker build-corpus)")
    corpus = load_corpus(corpus_file)
    store = PassageStore.open(ROOT / "embeddings" / "djangodocs__minilm-l6-onnx")
    assert store.manifest.corpus_sha256 == corpus_sha256(corpus)
    assert store.manifest.model_id == embedder.model_id
    assert store.documents() == sorted(d.id for d in corpus.documents)
    doc = corpus.documents[0]
    env = SeekerEnv(corpus, store, embedder.embed, None, 1, queries_per_step=len(doc.passages))
    env.reset(doc.id)
    assert env.step([p.text for p in doc.passages]).completeness == 1.0


def test_a_changed_vector_table_is_refused(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    import lancedb

    _, path = tiny
    copy = tmp_path / "store"
    shutil.copytree(path, copy)
    lancedb.connect(str(copy)).open_table("passages").delete("passage_id = 'p3'")
    store = PassageStore.open(copy)  # episodes read the rows file, checked per document
    assert store.matrix("tea")[0] == [f"p{i}" for i in range(1, 7)]
    with pytest.raises(UserError, match="do not match the manifest"):
        store.verify()  # build-store and check-store check the table too


def test_cli_run_and_sweep(tiny, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    from sgrgym.cli import main
    from sgrgym.seeker.corpus import save_corpus

    corpus, store = tiny
    corpus_file = tmp_path / "tiny.jsonl"
    save_corpus(corpus, corpus_file)
    common = [
        "--corpus",
        "tiny",
        "--corpus-file",
        str(corpus_file),
        "--store",
        str(store),
        "--steps",
        "2",
        "--quiet",
    ]
    # The CLI reads the model from embeddings/models under the working folder (the repo root).
    code = main(
        [
            "seeker",
            "run",
            *common,
            "--agent",
            "oracle-text",
            "--queries-per-step",
            str(len(PASSAGES)),
            "--out",
            str(tmp_path / "run"),
            "--json",
        ]
    )
    assert code == 0 and json.loads(capsys.readouterr().out)["final_completeness"] == 1.0
    typo = tmp_path / "typo"
    assert main(["seeker", "run", *common, "--docs", "tee", "--out", str(typo)]) == 2
    assert "no document 'tee' in corpus tiny (did you mean 'tea'?)" in capsys.readouterr().err
    assert not typo.exists()  # a typo leaves no run card behind to block the corrected command
    code = main(
        [
            "seeker",
            "sweep-theta",
            *common,
            "--agent",
            "phrases",
            "--thetas",
            "0.5",
            "0.9",
            "--out",
            str(tmp_path / "sweep"),
            "--json",
        ]
    )
    sweep = json.loads(capsys.readouterr().out)["final_completeness"]
    assert code == 0 and sweep["0.50"] >= sweep["0.90"]


def test_belief_phrases_reads_the_gaps_or_the_passages_it_is_shown() -> None:
    from sgrgym.seeker.agents import belief_candidates

    oracle = (
        "Title: Tea\nAbstract: About tea.\n\n# Trade\n[p2] Clipper ships raced tea to London.\n"
        "<missing id=p3>\n# Trade > Taxes\n<missing id=p4>\n"
    )
    assert belief_candidates(oracle) == ["Trade Clipper ships raced tea", "Taxes"]
    dedup = "Title: Tea\n\nRetrieved passages:\n[1] Green tea grows.\n[2] Black tea ferments."
    assert belief_candidates(dedup)[0] == "Black tea ferments"  # the newest find first
    assert belief_candidates("Title: Tea\n(none yet)") == []


def test_belief_phrases_episodes_depend_on_the_belief(tiny, embedder) -> None:  # type: ignore[no-untyped-def]
    from sgrgym.seeker.agents import make_agent

    finals = {}
    for belief in ("dedup", "oracle"):
        env = env_for(tiny, embedder, horizon=3)
        agent = make_agent("belief-phrases")
        env.reset("tea")
        state = env.state
        assert state is not None
        sent: list[str] = []
        rng = random.Random(0)
        while not state.done:
            queries = agent.queries(state, belief_renderer(belief)(state), rng)
            assert len(queries) <= 2 and not set(queries) & set(sent)  # never a repeat
            sent += queries
            env.step(queries)
        finals[belief] = sent
    assert finals["dedup"] != finals["oracle"]


def test_one_query_budget_for_every_agent(tiny, embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from sgrgym.seeker.env import QueryBudgetExceeded

    env = env_for(tiny, embedder, horizon=3, budget=2)
    env.reset("tea")
    with pytest.raises(QueryBudgetExceeded, match="3 queries, over the budget of 2 a step"):
        env.step(["tea", "ships", "taxes"])
    assert env.state is not None and env.state.history == []  # nothing was spent
    env.step(["tea", "ships"])
    with pytest.raises(UserError, match="at least 1"):
        env_for(tiny, embedder, budget=0)
    # the ceiling under a budget: the missing passages' texts, two a step
    ceiling = run_seeker(
        env_for(tiny, embedder, horizon=2, budget=2),
        OracleTextAgent(per_step=2),
        render=belief_renderer("dedup"),
        belief="dedup",
        doc_ids=["tea"],
        seeds=1,
        out_dir=tmp_path / "ceiling",
    )
    assert min(1.0, 4 / len(PASSAGES)) <= ceiling.final_completeness
