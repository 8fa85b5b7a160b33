"""The Gymnasium wrapper: check_env without warnings, Unicode, query lists, time limit versus
calibrated stop, a random-policy episode. Real pinned embedder, a store built here."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

gymnasium = pytest.importorskip("gymnasium")

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "embeddings" / "models"
if not (MODELS / "all-MiniLM-L6-v2" / "model.onnx").is_file():
    pytest.skip("the ONNX model is not exported", allow_module_level=True)

from gymnasium.utils.env_checker import check_env  # noqa: E402

from sgrgym.seeker.calibrate import CalibratedStop  # noqa: E402
from sgrgym.seeker.corpus import Corpus, CorpusSource, corpus_sha256, make_document  # noqa: E402
from sgrgym.seeker.embed import OnnxMiniLM  # noqa: E402
from sgrgym.seeker.env import EpisodeState, SeekerEnv  # noqa: E402
from sgrgym.seeker.gym import ENV_ID, SeekerGymEnv  # noqa: E402
from sgrgym.seeker.store import PassageRow, PassageStore, build_store  # noqa: E402

PASSAGES = [
    (("Brewing",), "Green tea leaves are steamed or pan-fired soon after picking."),
    (("Brewing",), "Water just below boiling keeps green tea from turning “bitter” — at 80 °C."),
    (("Growing",), "Tea bushes grow best on acidic soil with steady rainfall."),
    (("Trade",), "Clipper ships raced to carry the first tea of the season to London."),
]


@pytest.fixture(scope="module")
def seeker(tmp_path_factory: pytest.TempPathFactory) -> SeekerEnv:
    embedder = OnnxMiniLM(MODELS / "all-MiniLM-L6-v2", manifest_path=MODELS / "manifest.json")
    doc = make_document(
        "tea", "Tea — a “leaf” story", "How tea is grown, brewed and traded.", "food", PASSAGES
    )
    corpus = Corpus(name="tiny", source=CorpusSource(kind="test"), documents=(doc,))
    rows = [PassageRow(doc.id, p.id, " > ".join(p.section), p.order, p.text) for p in doc.passages]
    path = tmp_path_factory.mktemp("gym") / "tiny__minilm"
    build_store(path, "tiny", corpus_sha256(corpus), rows, embedder.embed, embedder.model_id)
    return SeekerEnv(corpus, PassageStore.open(path), embedder.embed, None, horizon=3)


def test_check_env_gives_no_warning(seeker: SeekerEnv) -> None:
    env = SeekerGymEnv(env=seeker, belief="oracle")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    assert [str(w.message) for w in caught] == []
    assert ENV_ID in gymnasium.registry


def test_unicode_query_lists_and_the_time_limit(seeker: SeekerEnv) -> None:
    env = SeekerGymEnv(env=seeker, belief="dedup")
    obs, info = env.reset(seed=1, options={"doc_id": "tea"})
    assert "Tea — a “leaf” story" in obs and info["doc_id"] == "tea"
    assert obs in env.observation_space
    action = ("ships carrying tea to London", "water temperature “80 °C” for green tea")
    assert action in env.action_space
    obs, reward, terminated, truncated, info = env.step(action)
    assert set(info["new"]) == {"p2", "p4"} and len(info["per_query"]) == 2
    assert "“bitter” — at 80 °C" in obs and obs in env.observation_space
    assert (reward, terminated, truncated) == (0.0, False, False)
    env.step("soil and rainfall for tea bushes")  # one string is one query
    obs, reward, terminated, truncated, info = env.step(())
    assert truncated and not terminated and info["step"] == 3
    assert reward == info["completeness"] > 0
    assert info["queries_per_step"] == 2


def test_the_action_space_is_the_query_budget(seeker: SeekerEnv) -> None:
    from sgrgym.seeker.env import QueryBudgetExceeded

    env = SeekerGymEnv(env=seeker, belief="dedup")
    env.action_space.seed(3)
    assert all(len(env.action_space.sample()) <= 2 for _ in range(200))
    assert ("a", "b", "c") not in env.action_space and ("a", "b") in env.action_space
    env.reset(seed=0, options={"doc_id": "tea"})
    with pytest.raises(QueryBudgetExceeded, match="over the budget of 2"):
        env.step(("tea", "ships", "taxes"))


def test_the_calibrated_stop_terminates(seeker: SeekerEnv) -> None:
    def estimate(state: EpisodeState) -> float:
        return len(state.retrieved) / 4  # stands in for a calibrated estimator's ĉ

    rule = CalibratedStop(estimate, q_hat=0.2, delta=0.25)
    env = SeekerGymEnv(env=seeker, stop_rule=rule)
    try:
        env.reset(options={"doc_id": "tea"})
        _, reward, terminated, truncated, info = env.step(["clipper ships and London"])
        assert not terminated and rule.estimates == [0.25]  # 0.25 - 0.2 < 0.25
        _, reward, terminated, truncated, info = env.step(["green tea water below boiling"])
        assert terminated and not truncated and info["step"] == 2
        assert reward == info["completeness"] == 0.5
    finally:
        seeker.stop_rule = None


def test_random_policy_episode(seeker: SeekerEnv) -> None:
    env = SeekerGymEnv(env=seeker)
    env.action_space.seed(7)
    obs, _ = env.reset(seed=7)
    steps, done = 0, False
    while not done:
        action = env.action_space.sample()
        assert action in env.action_space
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs in env.observation_space and 0.0 <= info["completeness"] <= 1.0
        done = terminated or truncated
        steps += 1
    assert steps == 3 and truncated and reward == info["completeness"]


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(
    not (ROOT / "tasks/seeker/djangodocs/corpus.jsonl").is_file(),
    reason="the demo corpus is not built (setup/test builds it)",
)
def test_make_with_no_argument_is_the_demo_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """``gymnasium.make("sgrgym/Seeker-v0")`` and ``sgrgym.seeker.make_env()`` build the same
    demo environment (one way to build it)."""
    import sgrgym.seeker

    monkeypatch.chdir(ROOT)
    env = gymnasium.make(ENV_ID)
    _, info = env.reset(seed=1)
    _, _, _, _, step = env.step(["how to upgrade to a newer django version"])
    direct = sgrgym.seeker.make_env()
    direct.reset(info["doc_id"], 1)
    result = direct.step(["how to upgrade to a newer django version"])
    assert step["per_query"] == result.per_query and step["completeness"] == result.completeness
    assert direct.store.manifest.corpus == "djangodocs"
