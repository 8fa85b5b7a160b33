"""Completeness uncertainty quantification: synthetic belief states, split conformal prediction,
estimators (with the LLM reply parser) and calibrated stopping.

The conformal rank and q̂ are checked against brute-force enumeration; coverage is checked on
exchangeable draws with fixed seeds. Tests that embed text use the real pinned ONNX model and
are skipped when it has not been exported.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from itertools import count
from pathlib import Path

import numpy as np
import pytest

from sgrgym.core.errors import UserError
from sgrgym.seeker.calibrate import (
    BeliefPool,
    Draws,
    EpisodeTrace,
    alpha_fraction,
    build_pool,
    calibrate_estimator,
    conformal_q_hat,
    conformal_rank,
    evaluate_stopping,
    interval_width_for,
    pool_beliefs,
    r_squared,
    remaining_intervals,
    render_table,
    run_protocol,
    split_indices,
    stop_step,
    synthetic_states,
)
from sgrgym.seeker.corpus import Corpus, CorpusSource, Document, make_document
from sgrgym.seeker.estimators import (
    COMPLETENESS_PROMPT,
    PARSE_FAILED,
    ConstantEstimator,
    EstimateCache,
    LLMEstimator,
    PromptTemplate,
    VisibleBelief,
    VisibleCountEstimator,
    make_estimator,
    parse_completeness,
    visible_belief,
)

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "embeddings" / "models"
HAVE_MODEL = (MODELS / "all-MiniLM-L6-v2" / "model.onnx").is_file()
needs_model = pytest.mark.skipif(not HAVE_MODEL, reason="the ONNX model is not exported")


def numbered_document(doc_id: str, n: int) -> Document:
    passages = [(("Part",), f"Passage number {i} of {doc_id}.") for i in range(1, n + 1)]
    return make_document(doc_id, doc_id.title(), f"About {doc_id}. It has parts.", "t", passages)


def numbered_corpus(sizes: list[int]) -> Corpus:
    docs = tuple(numbered_document(f"doc{i}", n) for i, n in enumerate(sizes))
    return Corpus(name="numbered", source=CorpusSource(kind="test"), documents=docs)


# --------------------------------------------------------------------------------------------
# Conformal rank and q̂ against brute force

ALPHAS = sorted({i / 100 for i in range(1, 100)} | {0.001, 0.005, 0.025, 0.125, 0.999, 1 / 3})


def brute_rank(n: int, alpha: float) -> int:
    """The smallest integer k with k >= (n + 1)(1 - α), α as the decimal it was written as."""
    target = Decimal(n + 1) * (1 - Decimal(str(alpha)))
    return next(k for k in count(0) if k >= target)


def test_rank_matches_enumeration_for_many_n_and_alpha() -> None:
    for n in range(0, 400):
        for alpha in ALPHAS:
            assert conformal_rank(n, alpha) == brute_rank(n, alpha), (n, alpha)
    exact = Decimal(20) * (1 - Decimal("0.95"))
    assert conformal_rank(19, 0.95) == int(exact.to_integral_value(ROUND_CEILING)) == 1


def test_float_ceiling_misrounds_where_the_exact_rank_does_not() -> None:
    # (n + 1)(1 - α) in floats: 10 * (1 - 0.7) = 3.0000000000000004, whose ceiling is 4.
    assert math.ceil(10 * (1 - 0.7)) == 4 and conformal_rank(9, 0.7) == 3
    misrounded = [
        (n, a)
        for n in range(200)
        for a in ALPHAS
        if math.ceil((n + 1) * (1 - a)) != conformal_rank(n, a)
    ]
    assert len(misrounded) > 50
    assert conformal_rank(9, Fraction(7, 10)) == conformal_rank(9, "0.7") == 3


def brute_q_hat(scores: list[float], alpha: float) -> float:
    """The smallest score s with #{e <= s} >= (n + 1)(1 - α); +∞ when there is none."""
    need = (len(scores) + 1) * (1 - Fraction(str(alpha)))
    for s in sorted(set(scores)):
        if sum(1 for e in scores if e <= s) >= need:
            return s
    return math.inf


def test_q_hat_matches_enumeration_with_ties() -> None:
    rng = np.random.default_rng(7)
    for n in range(0, 60):
        scores = [round(float(x), 2) for x in rng.random(n)]  # ties on purpose
        for alpha in (0.01, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.9, 0.99):
            assert conformal_q_hat(scores, alpha) == brute_q_hat(scores, alpha), (n, alpha)


def test_rank_above_n_gives_infinite_q_hat_never_a_capped_level() -> None:
    assert conformal_rank(8, 0.1) == 9 and conformal_q_hat([0.1] * 8, 0.1) == math.inf
    assert conformal_q_hat([0.1] * 8 + [0.7], 0.1) == 0.7  # k = 9 = n: the largest score
    assert conformal_q_hat([], 0.5) == math.inf
    assert conformal_rank(18, 0.05) == 19 and conformal_q_hat(list(range(18)), 0.05) == math.inf
    assert conformal_q_hat(list(range(19)), 0.05) == 18.0
    result = run_protocol([0.1, 0.5, 0.9, 0.3], [0.2, 0.4, 0.6, 0.3], 0.1, splits=2, seeds=2)
    assert result.q_hat == math.inf and math.isnan(result.q_hat_std)
    assert all(p.rank == 3 > p.n_calibration for p in result.partitions)
    assert '"q_hat":"Infinity"' in result.model_dump_json()


def test_alpha_is_validated() -> None:
    assert alpha_fraction(0.1) == Fraction(1, 10)
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(UserError, match="alpha"):
            alpha_fraction(bad)


# --------------------------------------------------------------------------------------------
# Coverage on exchangeable draws


@pytest.mark.parametrize(("n_cal", "alpha"), [(50, 0.1), (19, 0.05), (200, 0.2), (9, 0.1)])
def test_coverage_is_at_least_one_minus_alpha_on_exchangeable_draws(
    n_cal: int, alpha: float
) -> None:
    """Mean test coverage over 2,000 fixed-seed repetitions lies within 0.006 (≈4 standard
    errors) of [1 - α, 1 - α + 1/(n + 1)]; for continuous scores its expectation is k/(n+1)."""
    rng = np.random.default_rng(20240601 + n_cal)
    reps, n_test, tolerance = 2000, 50, 0.006
    covered = []
    for _ in range(reps):
        c = rng.random(n_cal + n_test)
        c_hat = np.clip(c + rng.normal(0.0, 0.2, c.shape), 0.0, 1.0)
        scores = np.abs(c - c_hat)
        q = conformal_q_hat(scores[:n_cal], alpha)
        covered.append(float(np.mean(scores[n_cal:] <= q)))
    mean = float(np.mean(covered))
    expected = conformal_rank(n_cal, alpha) / (n_cal + 1)
    assert mean >= 1 - alpha - tolerance
    assert mean <= 1 - alpha + 1 / (n_cal + 1) + tolerance
    assert abs(mean - expected) <= tolerance


def test_protocol_covers_on_an_exchangeable_pool() -> None:
    rng = np.random.default_rng(11)
    c = rng.random(600)
    c_hat = np.clip(c + rng.normal(0.0, 0.15, 600), 0.0, 1.0)
    result = run_protocol(c, c_hat, 0.1)
    assert len(result.partitions) == 30 and result.n_calibration == result.n_test == 300
    assert result.coverage >= 0.9 - 0.02
    assert 0.0 < result.r2 < 1.0 and result.q_hat > 0.0


def test_protocol_shape_and_perfect_and_constant_estimators() -> None:
    c = np.array([i / 20 for i in range(21)] * 3)
    perfect = run_protocol(c, c, 0.1)
    assert perfect.q_hat == 0.0 and perfect.coverage == 1.0 and perfect.r2 == 1.0
    assert perfect.n_calibration == 31 and perfect.n_test == 32  # n // 2, as 297 / 298 of 595
    assert {(p.split, p.seed) for p in perfect.partitions} == {
        (s, j) for s in range(3) for j in range(10)
    }
    fitted = run_protocol(c, np.zeros_like(c), 0.1, fit_mean=True)
    for part in fitted.partitions:
        cal, _ = split_indices(len(c), part.split, 0)  # one partition per split
        assert part.constant == round(float(np.mean(c[cal])), 6)
    assert abs(fitted.r2) < 0.1  # the calibration mean: R² about 0 out of sample
    means = [np.mean([p.q_hat for p in fitted.partitions if p.split == s]) for s in range(3)]
    assert fitted.q_hat == round(float(np.mean(means)), 6)
    assert fitted.q_hat_std == round(float(np.std(means, ddof=1)), 6)
    assert run_protocol(c, c, 0.1).model_dump() == perfect.model_dump()


def test_splits_are_seeded_halves() -> None:
    cal, test = split_indices(11, 0, 0)
    assert len(cal) == 5 and len(test) == 6 and sorted(cal + test) == list(range(11))
    assert split_indices(11, 0, 0) == (cal, test)
    assert split_indices(11, 0, 1) != (cal, test) and split_indices(11, 1, 0) != (cal, test)


def test_r_squared() -> None:
    c = np.array([0.0, 0.5, 1.0])
    assert r_squared(c, c) == 1.0
    assert r_squared(c, np.full(3, 0.5)) == 0.0
    assert r_squared(c, np.array([1.0, 0.5, 0.0])) == -3.0
    assert math.isnan(r_squared(np.full(3, 0.5), np.zeros(3)))


# --------------------------------------------------------------------------------------------
# Synthetic belief states (Algorithm 1)


def test_intervals_follow_the_papers_example() -> None:
    assert remaining_intervals(30, 10) == [(0, 9), (10, 19), (20, 29)]
    assert remaining_intervals(31, 10) == [(0, 9), (10, 19), (20, 29), (30, 30)]
    assert remaining_intervals(5, 10) == [(0, 4)]
    assert remaining_intervals(45, 15) == [(0, 14), (15, 29), (30, 44)]
    with pytest.raises(UserError):
        remaining_intervals(10, 0)
    assert interval_width_for("pydocs") == 10 and interval_width_for("ml-surveys") == 15
    states = synthetic_states(numbered_document("a", 30), 10, seed=0)
    assert [s.interval for s in states] == [0, 1, 2]
    low, mid, high = (s.completeness for s in states)
    assert 0.7 <= low <= 1.0 and 1 / 3 < mid <= 2 / 3 and 0 < high <= 1 / 3


def test_states_are_uniform_draws_within_their_intervals() -> None:
    doc = numbered_document("a", 47)
    ids = {p.id for p in doc.passages}
    remaining_seen: dict[int, set[int]] = {}
    for seed in range(300):
        for state in synthetic_states(doc, 10, seed):
            assert state.remaining_low <= state.remaining <= state.remaining_high
            assert len(state.retrieved) == 47 - state.remaining >= 1
            assert len(set(state.retrieved)) == len(state.retrieved)
            assert set(state.retrieved) <= ids
            remaining_seen.setdefault(state.interval, set()).add(state.remaining)
    assert remaining_seen == {
        j: set(range(lo, hi + 1)) for j, (lo, hi) in enumerate(remaining_intervals(47, 10))
    }


def test_draws_are_roughly_uniform() -> None:
    draws = Draws("test", 1)
    counts = np.bincount([draws.below(7) for _ in range(70_000)], minlength=7)
    assert counts.min() > 9_500 and counts.max() < 10_500


def test_seeds_reproduce_byte_identical_pools() -> None:
    corpus = numbered_corpus([12, 30, 31, 55])
    pool = build_pool(corpus, 10, seed=3)
    assert len(pool.states) == 2 + 3 + 4 + 6
    assert build_pool(corpus, 10, seed=3).to_bytes() == pool.to_bytes()
    assert build_pool(corpus, 10, seed=4).to_bytes() != pool.to_bytes()
    assert BeliefPool.model_validate(pool.model_dump()) == pool
    code = (
        "import sys; sys.path.insert(0, 'tests')\n"
        "from test_seeker_calibrate import numbered_corpus\n"
        "from sgrgym.seeker.calibrate import build_pool\n"
        "print(build_pool(numbered_corpus([12, 30, 31, 55]), 10, seed=3).sha256)"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env
    ).stdout.strip()
    assert other == pool.sha256
    # Pinned: a change here means a pool no longer reproduces across versions.
    assert pool.sha256 == "925a4c349232240330bb2bbce0d2f6932679f85114da42b9c9ef8853df4ee2b6"


def test_the_estimator_sees_only_the_visible_passages() -> None:
    corpus = numbered_corpus([20])
    pool = build_pool(corpus, 10, seed=0)
    doc = corpus.documents[0]
    for state, belief in zip(pool.states, pool_beliefs(corpus, pool), strict=True):
        hidden = [p.text for p in doc.passages if p.id not in state.retrieved]
        assert hidden and not any(text in belief.text for text in hidden)
        assert belief.passages == tuple(doc.passage(pid).text for pid in state.retrieved)
        assert "Retrieved passages:" in belief.text and belief.abstract == doc.abstract
    assert not hasattr(belief, "n_passages") and not hasattr(belief, "document")


# --------------------------------------------------------------------------------------------
# Estimators and the estimate cache


class CountingEstimator:
    name = "counting"
    id = "counting[v1]"
    fits_calibration_mean = False
    seeded = False

    def __init__(self) -> None:
        self.calls = 0

    def estimate(self, belief: VisibleBelief, seed: int = 0) -> float | None:
        self.calls += 1
        return len(belief.passages) / 40


def test_estimates_are_cached_per_estimator_and_state(tmp_path: Path) -> None:
    corpus = numbered_corpus([12, 30, 31])
    pool = build_pool(corpus, 5, seed=0)
    estimator = CountingEstimator()
    cache = EstimateCache(tmp_path / "estimates.jsonl")
    first = calibrate_estimator(corpus, pool, estimator, cache, 0.1)
    assert estimator.calls == first.report.estimates_computed == len(pool.states)
    second = calibrate_estimator(corpus, pool, estimator, cache, 0.1)
    assert estimator.calls == len(pool.states) and second.report.estimates_cached == len(
        pool.states
    )
    assert second.report == first.report.model_copy(
        update={"estimates_computed": 0, "estimates_cached": len(pool.states)}
    )
    reloaded = EstimateCache(tmp_path / "estimates.jsonl")
    fresh = CountingEstimator()
    third = calibrate_estimator(corpus, pool, fresh, reloaded, 0.1)
    assert fresh.calls == 0 and third.c_hat == first.c_hat
    (tmp_path / "bad.jsonl").write_text("not json\n")
    with pytest.raises(UserError, match=r"bad\.jsonl line 1"):
        EstimateCache(tmp_path / "bad.jsonl")


def test_constant_and_count_baselines() -> None:
    corpus = numbered_corpus([12, 30, 31, 40])
    pool = build_pool(corpus, 5, seed=1)
    const = calibrate_estimator(corpus, pool, ConstantEstimator(), EstimateCache(), 0.1)
    assert len(set(const.c_hat)) == 1
    assert const.c_hat[0] == round(float(np.mean(const.c)), 6)
    assert all(p.constant is not None for p in const.protocol.partitions)
    counted = calibrate_estimator(corpus, pool, VisibleCountEstimator(), EstimateCache(), 0.1)
    assert counted.c_hat == [
        round(len(s.retrieved) / (len(s.retrieved) + 30), 6) for s in pool.states
    ]
    assert counted.report.r2 > const.report.r2
    table = render_table([const.report, counted.report])
    assert "constant" in table and "visible-count" in table and "±" in table
    with pytest.raises(UserError, match="LLM layer"):
        make_estimator("llm")
    with pytest.raises(UserError, match="no estimator"):
        make_estimator("psychic")
    with pytest.raises(UserError, match="embedder"):
        make_estimator("abstract-coverage")


# --------------------------------------------------------------------------------------------
# The LLM estimator's interface and reply parser

PARSES = [
    ("0.4", 0.4),
    (".4", 0.4),
    ("0,4", 0.4),
    ("40%", 0.4),
    ("40 %", 0.4),
    ("35 percent", 0.35),
    ("35 per cent", 0.35),
    ("about 2/5", 0.4),
    ("2 out of 5", 0.4),
    ("I retrieved 12 of 30 passages.", 0.4),
    ("Completeness: 0.35", 0.35),
    ("completeness:0.35", 0.35),
    ("Completeness ratio: 35%", 0.35),
    ("Completeness: 35%.", 0.35),
    ("**Completeness:** 0.35", 0.35),
    ("`0.35`", 0.35),
    ('{"completeness": 0.35}', 0.35),
    ("completeness = .35", 0.35),
    ("The answer is 0.7.", 0.7),
    ("0.5.", 0.5),
    ("roughly half", 0.5),
    ("two thirds", 0.666667),
    ("three quarters", 0.75),
    ("between 0.3 and 0.4", 0.35),
    ("0.3-0.4", 0.35),
    ("0.3–0.4", 0.35),
    ("30-40%", 0.35),
    ("30 to 40%", 0.35),
    ("1.2", 1.0),
    ("-0.1", 0.0),
    ("150%", 1.0),
    ("40", 0.4),
    ("1", 1.0),
    ("0", 0.0),
    ("Completeness: 1.0", 1.0),
    ("<think>maybe 0.9, or 2/3</think>\nCompleteness: 0.2", 0.2),
    ("I found [p17] and [p3]; completeness 0.25", 0.25),
    ("Step 1: I think about 0.6 overall", 0.6),
    ("Completeness 0.6 after step 1", 0.6),
    ("I retrieved 12 passages; estimate 0.3", 0.3),
    ("approximately 0.45 (about 20 passages)", 0.45),
    ("Completeness: 0.35\nConfidence: 0.9", 0.35),
    ("Estimated completeness: I have seen 12 of 30 passages", 0.4),
    ("Completeness: 0.2 at first; final completeness: 0.45", 0.45),
    ("0.25 or 0.3", 0.3),
    ("", PARSE_FAILED),
    ("I cannot tell.", PARSE_FAILED),
    ("Completeness: unknown", PARSE_FAILED),
    ("2/0", PARSE_FAILED),
    ("12 and 30", PARSE_FAILED),
    ("250", PARSE_FAILED),
    ("nan", PARSE_FAILED),
    ("<think>still thinking, maybe 0.8", PARSE_FAILED),
]


@pytest.mark.parametrize(("reply", "expected"), PARSES)
def test_parse_completeness(reply: str, expected: float | None) -> None:
    value = parse_completeness(reply)
    assert value == expected
    if value is not None:
        assert 0.0 <= value <= 1.0


def scripted_replies(body: dict[str, object]) -> str:
    """Replies by seed: seed 1 is unreadable, the others read as a seed-dependent ratio."""
    seed = int(body["seed"])  # type: ignore[call-overload]
    return "no idea" if seed == 1 else f"Let me count.\nCompleteness: {0.1 + seed / 20:.2f}"


def test_llm_estimator_over_the_recorded_chat_client(tmp_path: Path) -> None:
    from chat_server import scripted

    from sgrgym.core.loopback import serve_http
    from sgrgym.llm.chat import ChatClient

    corpus = numbered_corpus([12, 30])
    pool = build_pool(corpus, 5, seed=0)
    handler = scripted(scripted_replies)
    cache_file = tmp_path / "chat.sqlite"
    with serve_http(handler) as url:
        client = ChatClient(url, "test-model", cache_path=cache_file, mode="record")
        estimator = LLMEstimator(client, temperature=0.7)
        result = calibrate_estimator(corpus, pool, estimator, EstimateCache(), 0.1, seeds=3)
        client.close()
    n = len(pool.states)
    assert len(handler.received) == 3 * n and estimator.calls == 3 * n
    first = handler.received[0]
    assert first["seed"] == 0 and first["temperature"] == 0.7 and first["model"] == "test-model"
    user = first["messages"][1]["content"]  # type: ignore[index]
    assert "[1] Passage number" in user and "[p" not in user  # ids hidden by default
    report = result.report
    assert report.estimator_seeded and report.estimate_belief == "dedup"
    assert report.parse_failures == n and estimator.parse_failures == n  # all of seed 1
    assert report.prompt_version == "completeness-v1"
    assert (
        report.prompt_sha256 == COMPLETENESS_PROMPT.sha256 and len(COMPLETENESS_PROMPT.sha256) == 64
    )
    assert report.llm is not None and report.llm["returned_models"] == ["served-model-7b"]
    assert report.failure_rule == "worst" and report.protocol == "splits-x-seeds"
    assert result.c_hat_by_seed is not None
    assert [row[0] for row in result.c_hat_by_seed] == [0.1, None, 0.2]
    by_seed = {p.seed: p for p in result.protocol.partitions if p.split == 0}
    assert by_seed[1].parse_failures == n and by_seed[0].parse_failures == 0
    assert by_seed[1].n_calibration == n // 2  # worst: failures stay in, scored max(c, 1 - c)
    assert by_seed[1].coverage <= by_seed[0].coverage or by_seed[1].q_hat >= by_seed[0].q_hat
    # Replay offline: the same report, byte for byte; exclusion drops seed 1's states.
    with ChatClient(url, "test-model", cache_path=cache_file) as replay:
        again = calibrate_estimator(
            corpus, pool, LLMEstimator(replay, temperature=0.7), EstimateCache(), 0.1, seeds=3
        )
        excluded = calibrate_estimator(
            corpus,
            pool,
            LLMEstimator(replay, temperature=0.7),
            EstimateCache(),
            0.1,
            seeds=3,
            failure_rule="exclude",
        )
    strip = {"llm", "estimates_computed", "estimates_cached"}
    assert again.report.model_dump_json(exclude=strip) == report.model_dump_json(exclude=strip)
    assert {p.n_calibration for p in excluded.protocol.partitions if p.seed == 1} == {0}
    assert excluded.report.failure_rule == "exclude"
    braces = VisibleBelief("T", "{x} {belief}", (), "Abstract: {x} {belief}")
    assert COMPLETENESS_PROMPT.messages(braces)[1]["content"].startswith("Abstract: {x} {belief}")
    with pytest.raises(ValueError, match="slot"):
        PromptTemplate(system="s", user="no slot here")


def test_deterministic_estimators_give_identical_seeds_and_the_partition_is_per_split() -> None:
    corpus = numbered_corpus([12, 30, 31, 40])
    pool = build_pool(corpus, 5, seed=1)
    estimator = CountingEstimator()
    result = calibrate_estimator(corpus, pool, estimator, EstimateCache(), 0.1)
    assert estimator.calls == len(pool.states)  # once, not once per seed
    assert not result.report.estimator_seeded and result.c_hat_by_seed is None
    for split in range(3):
        parts = [p for p in result.protocol.partitions if p.split == split]
        assert len(parts) == 10 and len({(p.q_hat, p.coverage, p.r2) for p in parts}) == 1
    resampled = calibrate_estimator(
        corpus, pool, estimator, EstimateCache(), 0.1, protocol="resampled-partitions"
    )
    parts = [p for p in resampled.protocol.partitions if p.split == 0]
    assert len({(p.q_hat, p.coverage, p.r2) for p in parts}) > 1
    with pytest.raises(UserError, match="no protocol"):
        run_protocol([0.5], [0.5], 0.1, protocol="bootstrap")
    with pytest.raises(UserError, match="no failure rule"):
        calibrate_estimator(corpus, pool, estimator, EstimateCache(), 0.1, failure_rule="zero")


def test_dedup_numbers_passages_in_retrieval_order() -> None:
    from sgrgym.seeker.belief import belief_renderer
    from sgrgym.seeker.env import EpisodeState

    doc = numbered_document("d", 60)
    state = EpisodeState(doc, 0, 1, retrieved=["p47", "p3"])
    dedup = belief_renderer("dedup")(state)
    assert "[1] Passage number 47 of d." in dedup and "[2] Passage number 3" in dedup
    assert "p47" not in dedup and "<missing id=p46>" in belief_renderer("oracle")(state)


# --------------------------------------------------------------------------------------------
# Calibrated stopping


def test_stop_step_uses_the_calibrated_lower_bound() -> None:
    assert stop_step([0.1, 0.3, 0.6], q_hat=0.2, delta=0.1) == 2  # 0.3 - 0.2 == 0.1 in decimals
    assert stop_step([0.1, 0.2, 0.25], q_hat=0.2, delta=0.1) == 3  # never: the horizon
    assert stop_step([0.9], q_hat=math.inf, delta=0.0) == 1


def test_evaluate_stopping_against_the_horizon() -> None:
    traces = [
        EpisodeTrace(
            doc_id="a", seed=0, completeness=(0.1, 0.4, 0.5, 0.6), c_hat=(0.2, 0.6, 0.7, 0.8)
        ),
        EpisodeTrace(
            doc_id="b", seed=0, completeness=(0.0, 0.1, 0.1, 0.2), c_hat=(0.0, 0.1, 0.2, 0.3)
        ),
    ]
    result = evaluate_stopping(traces, q_hat=0.25, delta=0.3)
    assert result.episodes == 2 and result.horizon == 4
    assert result.mean_stop_step == 3.0  # a stops at step 2, b runs to 4
    assert result.stopped_early == 1 and result.stopped_early_share == 0.5
    assert result.stops_with_c_at_least_delta == 1.0  # a stopped with c = 0.4 >= 0.3
    assert result.steps_saved == 1.0
    assert result.completeness_at_horizon == 0.4 and result.completeness_at_stop == 0.3
    assert result.completeness_lost == 0.1
    assert result.interval_coverage == 1.0
    tokened = [t.model_copy(update={"belief_tokens": (10, 20, 30, 40)}) for t in traces]
    # The same episodes run with the rule inside: a ended after step 2, b ran to the horizon.
    live = [
        tokened[0].model_copy(
            update={
                "completeness": (0.1, 0.4),
                "c_hat": (0.2, 0.6),
                "belief_tokens": (10, 20),
                "stopped": True,
            }
        ),
        tokened[1],
    ]
    inside = evaluate_stopping(tokened, q_hat=0.25, delta=0.3, stopped=live)
    assert inside.stopped == inside.stopped_early == 1 and inside.mean_stop_step == 3.0
    assert inside.tokens_saved == 35.0 and inside.tokens_saved_share == round(70 / 200, 6)
    assert inside.completeness_lost == result.completeness_lost
    assert inside.stops_with_c_at_least_delta == 1.0
    with pytest.raises(ValueError, match="differ"):
        evaluate_stopping(tokened, q_hat=0.25, delta=0.3, stopped=live[:1] + live[:1])
    never = evaluate_stopping(tokened, q_hat=0.9, delta=0.3)
    assert never.stopped == 0 and math.isnan(never.stops_with_c_at_least_delta)
    with pytest.raises(UserError):
        evaluate_stopping([], 0.1, 0.1)


# --------------------------------------------------------------------------------------------
# With the real embedder: abstract coverage, episodes, the CLI

DOCS = {
    "tea": (
        "Tea is grown on bushes, processed after picking and brewed with hot water. "
        "It was traded across oceans for centuries.",
        [
            "Green tea leaves are steamed or pan-fired soon after picking to stop oxidation.",
            "Water just below boiling keeps green tea from turning bitter.",
            "Black tea is fully oxidised before drying, which darkens the leaves.",
            "Tea bushes grow best on acidic soil with steady rainfall.",
            "Highland plantations produce slower-growing leaves with more aroma.",
            "Clipper ships raced to carry the first tea of the season to London.",
            "Pickers take the top two leaves and a bud from each shoot.",
            "Tea auctions set prices for estates that sell in bulk.",
        ],
    ),
    "bicycles": (
        "Bicycles turn pedalling into motion through a chain and gears. "
        "Their frames and tyres decide how they ride.",
        [
            "A chain carries force from the pedals to the rear wheel.",
            "Derailleurs move the chain between sprockets to change gear.",
            "Steel frames are heavy but absorb road vibration well.",
            "Carbon fibre frames are light and stiff but costly to repair.",
            "Wide tyres at low pressure grip loose gravel.",
            "Narrow tyres at high pressure roll fast on smooth roads.",
            "Disc brakes stop reliably in wet weather.",
            "Early bicycles had a huge front wheel and no gears.",
        ],
    ),
    "volcanoes": (
        "Volcanoes form where molten rock reaches the surface. "
        "Their eruptions range from gentle lava flows to violent explosions.",
        [
            "Magma rises through cracks in the crust because it is less dense than rock.",
            "Runny basalt lava builds broad shield volcanoes.",
            "Sticky lava traps gas and leads to explosive eruptions.",
            "Ash clouds can ground aircraft far from the eruption.",
            "Pyroclastic flows race downhill at hundreds of kilometres per hour.",
            "Volcanic soils are rich and attract farmers.",
            "Seismometers detect the small earthquakes that precede eruptions.",
            "Hot springs and geysers are heated by shallow magma.",
        ],
    ),
}


@pytest.fixture(scope="module")
def embedder():  # type: ignore[no-untyped-def]
    if not HAVE_MODEL:
        pytest.skip("the ONNX model is not built (sgrgym seeker build-model)")
    from sgrgym.seeker.embed import OnnxMiniLM

    return OnnxMiniLM(MODELS / "all-MiniLM-L6-v2", manifest_path=MODELS / "manifest.json")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, embedder) -> tuple[Corpus, Path, Path]:  # type: ignore[no-untyped-def]
    from sgrgym.seeker.corpus import corpus_sha256, save_corpus
    from sgrgym.seeker.store import PassageRow, build_store

    docs = tuple(
        make_document(name, name.title(), abstract, "test", [(("Body",), t) for t in texts])
        for name, (abstract, texts) in DOCS.items()
    )
    corpus = Corpus(name="tiny", source=CorpusSource(kind="test"), documents=docs)
    rows = [PassageRow(d.id, p.id, "Body", p.order, p.text) for d in docs for p in d.passages]
    folder = tmp_path_factory.mktemp("calibrate")
    store = folder / "tiny__minilm"
    build_store(store, "tiny", corpus_sha256(corpus), rows, embedder.embed, embedder.model_id)
    corpus_file = folder / "tiny.jsonl"
    save_corpus(corpus, corpus_file)
    return corpus, corpus_file, store


@needs_model
def test_abstract_coverage_grows_with_the_visible_set(tiny, embedder) -> None:  # type: ignore[no-untyped-def]
    from sgrgym.seeker.env import EpisodeState
    from sgrgym.seeker.estimators import AbstractCoverageEstimator

    corpus, _, _ = tiny
    estimator = AbstractCoverageEstimator(embedder)
    doc = corpus.document("tea")
    ids = [p.id for p in doc.passages]
    values = [
        estimator.estimate(visible_belief(EpisodeState(doc, 0, 1, retrieved=ids[:k])))
        for k in range(len(ids) + 1)
    ]
    assert values[0] == 0.0 and values == sorted(values) and 0.0 < values[-1] <= 1.0
    again = estimator.estimate(visible_belief(EpisodeState(doc, 0, 1, retrieved=ids)))
    assert again == values[-1]
    assert estimator.id.startswith("abstract-coverage[minilm-l6-onnx@")


@needs_model
def test_cli_calibrate_json_and_outputs(tiny, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from sgrgym.cli import main

    _, corpus_file, store = tiny
    common = [
        "seeker",
        "calibrate",
        "--corpus",
        "tiny",
        "--corpus-file",
        str(corpus_file),
        "--store",
        str(store),
        "--interval-width",
        "2",
        "--steps",
        "2",
        "--quiet",
    ]
    out = tmp_path / "out"
    code = main(
        [
            *common,
            "--alpha",
            "0.2",
            "--json",
            "--out",
            str(out),
            "--estimator",
            "constant",
            "abstract-coverage",
            "visible-count",
        ]
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and len(lines) == 3
    reports = [json.loads(line) for line in lines]
    for report in reports:
        for key in ("q_hat", "q_hat_std", "r2", "r2_std", "coverage", "n_states"):
            assert key in report
        assert report["n_states"] == 12 and report["n_calibration"] == 6
        assert len(report["stopping"]) == 4 and report["stopping"][0]["horizon"] == 2
    assert [r["estimator"] for r in reports] == ["constant", "abstract-coverage", "visible-count"]
    pool = (out / "pool.jsonl").read_bytes()
    pairs = (out / "visible-count" / "pairs.jsonl").read_text().splitlines()
    assert len(pairs) == 12 and {"c", "c_hat", "score"} <= set(json.loads(pairs[0]))
    scores = json.loads((out / "visible-count" / "scores.json").read_text())
    assert len(scores["scores"]) == 12 and len(scores["q_hat_by_partition"]) == 30
    assert (out / "abstract-coverage" / "episodes.jsonl").is_file()
    # The same command again writes the same pool and pairs.
    main(
        [
            *common,
            "--alpha",
            "0.2",
            "--json",
            "--out",
            str(tmp_path / "again"),
            "--estimator",
            "visible-count",
        ]
    )
    capsys.readouterr()
    assert (tmp_path / "again" / "pool.jsonl").read_bytes() == pool
    again = (tmp_path / "again" / "visible-count" / "pairs.jsonl").read_text().splitlines()
    assert again == pairs
    # 6 calibration states at α = 0.1: k = 7 > 6, q̂ = +∞ (printed as inf).
    code = main([*common, "--alpha", "0.1", "--estimator", "visible-count", "--no-stopping"])
    text = capsys.readouterr().out
    assert code == 0 and "inf ± nan" in text and "Calibrated stopping" not in text
    assert main([*common, "--estimator", "llm"]) == 2
    assert "--model NAME" in capsys.readouterr().err


@needs_model
def test_cli_llm_estimator_records_then_replays(tiny, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from chat_server import scripted

    from sgrgym.cli import main
    from sgrgym.core.loopback import serve_http

    _, corpus_file, store = tiny
    handler = scripted(scripted_replies)
    cache = tmp_path / "llm.sqlite"
    with serve_http(handler) as url:
        common = [
            "seeker",
            "calibrate",
            "--corpus",
            "tiny",
            "--corpus-file",
            str(corpus_file),
            "--store",
            str(store),
            "--interval-width",
            "2",
            "--steps",
            "2",
            "--quiet",
            "--json",
            "--alpha",
            "0.2",
            "--estimator",
            "llm",
            "--llm-model",
            "tiny-llm",
            "--base-url",
            url,
            "--llm-cache",
            str(cache),
            "--estimator-seeds",
            "2",
            "--temperature",
            "0.5",
        ]
        assert main([*common, "--llm-mode", "record"]) == 0
    recorded = json.loads(capsys.readouterr().out)
    assert recorded["estimator_seeded"] and recorded["seeds"] == 2
    assert recorded["parse_failures"] == 12  # seed 1 never parses; scored as the worst
    assert recorded["llm"]["requested_model"] == "tiny-llm"
    assert recorded["llm"]["returned_models"] == ["served-model-7b"]
    assert recorded["prompt_version"] == "completeness-v1" and recorded["stopping"]
    assert {body["temperature"] for body in handler.received} == {0.5}
    # Replay (the default mode): no server, the same report.
    assert main(common) == 0
    replayed = json.loads(capsys.readouterr().out)
    for key in ("q_hat", "r2", "coverage", "parse_failures", "stopping", "prompt_sha256"):
        assert replayed[key] == recorded[key]
    assert main([*common[:-2], "--temperature", "0.9"]) == 2
    assert "not in the cache" in capsys.readouterr().err


def test_cli_calibrate_bad_options_name_the_flag(capsys) -> None:  # type: ignore[no-untyped-def]
    from sgrgym.cli import main

    for flag, value, message in (
        ("--steps", "0", "0 is not from 1 to 1,000"),
        ("--queries-per-step", "0", "0 is not from 1 to 100"),
        ("--alpha", "nan", "'nan' is not a number in (0, 1)"),
        ("--theta", "-1", "'-1' is not a number in (0, 1)"),
    ):
        with pytest.raises(SystemExit) as stop:  # refused while parsing: nothing ran
            main(["seeker", "calibrate", flag, value, "--no-stopping", "--quiet"])
        assert stop.value.code == 2
        assert f"argument {flag}: {message}" in capsys.readouterr().err
