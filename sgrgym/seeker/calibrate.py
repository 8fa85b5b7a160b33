"""Completeness uncertainty quantification: synthetic belief states, split-conformal
calibration and calibrated stopping (paper sections 2.4 and 3.3, appendix B.3, table 4,
figure 2c-d).

What is implemented, and where each rule comes from:

**Synthetic belief states** (paper appendix B.3, "Algorithm 1"). For a document with N
passages the remaining-passage axis r = N - retrieved is cut into ⌈N/Δ⌉ intervals of width Δ,
``[jΔ, min((j+1)Δ, N) - 1]`` for j = 0, 1, ...; one state is drawn per interval: first r,
uniformly within the interval, then which N - r passages are retrieved, uniformly without
replacement. r runs over 0..N-1, so every state holds at least one passage and a state may
be complete; an article of 30 passages with Δ = 10 gives three states (low, mid and high
coverage), the paper's example. The body of Algorithm 1 is not in the paper's text: the
interval bounds are this module's reading of it. Δ = 10 for encyclopedic corpora and 15 for
survey-like ones (appendix B.3), set per corpus in :data:`INTERVAL_WIDTHS` (the demo corpus of
Python reference pages: 10) and overridable. Draws use ``random.Random`` seeded from
sha256(seed, document id) and only its ``random()`` method (whose sequence Python keeps stable
across versions), so a seed reproduces a byte-identical pool. The retrieved passages keep the
order of the draw, their "retrieval order". The estimator sees the state rendered as the
deduplicated-trajectory belief (section 3.3); the true c = retrieved / N stays aside
(section 2.4, figure 2c). Pools are split 50%/50% into calibration and test (appendix B.3:
n // 2 calibration states, as in the paper's 297 / 298 of 595).

**Conformal calibration** (section 2.4, appendix D.1 "Algorithm 2"). Nonconformity scores
e_i = |c_i - ĉ_i| on the calibration split; q̂ is the k-th smallest score with
k = ⌈(n + 1)(1 - α)⌉, computed exactly in integers from α read as the decimal it was written
as (``Fraction(str(alpha))``), never as the float ceiling of a float product; q̂ = +∞ when
k > n (the level is never capped at 1). The interval [ĉ - q̂, ĉ + q̂] then covers c with
probability at least 1 - α for exchangeable states. Reported: q̂, the empirical coverage of the
test split (|c - ĉ| <= q̂) and the raw out-of-sample R² of ĉ against c on the test split,
1 - SS_res / SS_tot about the test split's mean (table 4).

**Protocol** (section 3.3): 3 random splits, each averaged over 10 random seeds; reported as
mean ± std across the 3 split-level means (std with ddof = 1). Here a split seed s and an inner
seed j together draw one random 50/50 calibration/test partition of the pool (30 partitions),
since the offline estimators are deterministic; the ``constant`` estimator is refit (mean c of
the calibration split) in every partition. Estimates are computed once per state and cached.

**Calibrated stopping** (figure 2d, section 2.2 "Horizon"): an agent's episode stops after the
first step t whose deduplicated-trajectory belief gives ĉ_t - q̂ >= δ (with a 1e-12 tolerance
for float round-off), else at the horizon M. q̂ is calibrated on the whole synthetic pool (the
episodes are the test data). Reported against running to the horizon: steps saved (M - t),
completeness lost (c_M - c_t), the share of episodes stopped early, and the share of episode
states whose interval [ĉ - q̂, ĉ + q̂] holds c (episode states are not exchangeable with the
synthetic ones, so this share carries no guarantee). δ is not given in the paper; several
values are evaluated.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from statistics import fmean, stdev

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from sgrgym import __version__
from sgrgym.errors import UserError
from sgrgym.hashing import sha256_bytes
from sgrgym.inputs import read_bytes
from sgrgym.report.output import jsonl_line
from sgrgym.report.table import format_table
from sgrgym.runs.folder import open_run_folder
from sgrgym.seeker.agents import SeekerAgent, make_agent
from sgrgym.seeker.belief import Renderer, dedup_belief
from sgrgym.seeker.corpus import Corpus, Document, corpus_sha256
from sgrgym.seeker.embed import CachedEmbedder, Embedder, QueryCache, load_embedder
from sgrgym.seeker.env import EpisodeState, SeekerEnv
from sgrgym.seeker.estimators import (
    CompletenessEstimator,
    EstimateCache,
    VisibleBelief,
    clamp_ratio,
    make_estimator,
    visible_belief,
)
from sgrgym.seeker.pinned import load_pinned_corpus
from sgrgym.seeker.run import episode_seed
from sgrgym.seeker.store import PassageStore

FloatArray = npt.NDArray[np.float64]
Progress = Callable[[int, int, str], None]

ENCYCLOPEDIC_WIDTH = 10  # appendix B.3: Δ = 10 for Wikipedia
SURVEY_WIDTH = 15  # appendix B.3: Δ = 15 for ML Surveys
INTERVAL_WIDTHS = {"pydocs": ENCYCLOPEDIC_WIDTH, "wikipedia": ENCYCLOPEDIC_WIDTH,
                   "ml-surveys": SURVEY_WIDTH}  # fmt: skip
SPLITS = 3  # section 3.3
SEEDS = 10  # section 3.3
ALPHA = 0.1  # section 3.3: target coverage 1 - α = 90%
STOP_DELTAS = (0.05, 0.1, 0.2, 0.3)
ROUND = 6
STOP_TOLERANCE = 1e-12


def interval_width_for(corpus: str) -> int:
    """Δ for a corpus by name (:data:`INTERVAL_WIDTHS`), else the encyclopedic 10."""
    return INTERVAL_WIDTHS.get(corpus, ENCYCLOPEDIC_WIDTH)


# --------------------------------------------------------------------------------------------
# Seeded draws that only use random.random()


class Draws:
    """Uniform integer draws from ``random.Random(seed).random()`` (stable across Pythons)."""

    def __init__(self, *parts: object) -> None:
        text = ":".join(str(p) for p in parts)
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        self._rng = random.Random(int.from_bytes(digest[:8], "big"))

    def below(self, n: int) -> int:
        """An integer in [0, n), n >= 1 (bias below n / 2**53)."""
        return min(n - 1, int(self._rng.random() * n))

    def between(self, low: int, high: int) -> int:
        """An integer in [low, high], both inclusive."""
        return low + self.below(high - low + 1)

    def prefix_shuffle(self, n: int, k: int) -> list[int]:
        """The first ``k`` positions of a Fisher-Yates shuffle of ``range(n)``."""
        items = list(range(n))
        for i in range(k):
            j = i + self.below(n - i)
            items[i], items[j] = items[j], items[i]
        return items[:k]


# --------------------------------------------------------------------------------------------
# Synthetic belief states (appendix B.3, Algorithm 1)


class SyntheticState(BaseModel):
    """One synthetic belief state: interval j of the remaining axis, its draw, the passages."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_id: str
    interval: int = Field(ge=0)
    remaining_low: int = Field(ge=0)
    remaining_high: int = Field(ge=0)
    remaining: int = Field(ge=0)
    n_passages: int = Field(ge=1)
    retrieved: tuple[str, ...]

    @property
    def completeness(self) -> float:
        """The true c = retrieved / N (kept away from the estimator)."""
        return len(self.retrieved) / self.n_passages

    def episode_state(self, document: Document) -> EpisodeState:
        """The state as an episode state of ``document`` (for belief renderers)."""
        return EpisodeState(document, seed=0, horizon=0, retrieved=list(self.retrieved))


def remaining_intervals(n_passages: int, width: int) -> list[tuple[int, int]]:
    """The ⌈N/Δ⌉ intervals ``[jΔ, min((j+1)Δ, N) - 1]`` of the remaining count r ∈ [0, N-1]."""
    if width < 1:
        raise UserError(f"the interval width Δ must be at least 1, got {width}")
    return [(low, min(low + width, n_passages) - 1) for low in range(0, n_passages, width)]


def synthetic_states(document: Document, width: int, seed: int) -> list[SyntheticState]:
    """One state per interval of ``document``'s remaining axis (Algorithm 1)."""
    n = document.n_passages
    draws = Draws("sgrgym-seeker-belief", seed, document.id)
    states = []
    for j, (low, high) in enumerate(remaining_intervals(n, width)):
        remaining = draws.between(low, high)
        chosen = draws.prefix_shuffle(n, n - remaining)
        states.append(
            SyntheticState(
                doc_id=document.id, interval=j, remaining_low=low, remaining_high=high,
                remaining=remaining, n_passages=n,
                retrieved=tuple(document.passages[i].id for i in chosen),
            )
        )  # fmt: skip
    return states


class BeliefPool(BaseModel):
    """The synthetic states of a corpus for one seed and Δ, in corpus then interval order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    corpus: str
    seed: int
    interval_width: int
    states: tuple[SyntheticState, ...]

    def to_bytes(self) -> bytes:
        """A header line, then one state a line (sorted keys): the same pool, the same bytes."""
        header = {"corpus": self.corpus, "seed": self.seed,
                  "interval_width": self.interval_width, "states": len(self.states)}  # fmt: skip
        lines = [jsonl_line(header)] + [jsonl_line(s.model_dump(mode="json")) for s in self.states]
        return "".join(lines).encode("utf-8")

    @property
    def sha256(self) -> str:
        return sha256_bytes(self.to_bytes())

    def completeness(self) -> FloatArray:
        return np.array([s.completeness for s in self.states], dtype=np.float64)


def build_pool(corpus: Corpus, width: int, seed: int) -> BeliefPool:
    """Algorithm 1 over every document of ``corpus``."""
    states = [s for d in corpus.documents for s in synthetic_states(d, width, seed)]
    return BeliefPool(corpus=corpus.name, seed=seed, interval_width=width, states=tuple(states))


def pool_beliefs(
    corpus: Corpus, pool: BeliefPool, render: Renderer = dedup_belief
) -> list[VisibleBelief]:
    """What the estimator sees of each pool state (deduplicated-trajectory belief)."""
    documents = {d.id: d for d in corpus.documents}
    return [visible_belief(s.episode_state(documents[s.doc_id]), render) for s in pool.states]


# --------------------------------------------------------------------------------------------
# Split conformal prediction (section 2.4, appendix D.1)


def alpha_fraction(alpha: float | str | Fraction) -> Fraction:
    """α as an exact fraction of the decimal it was written as (0.1 → 1/10); 0 < α < 1."""
    value = alpha if isinstance(alpha, Fraction) else Fraction(str(alpha))
    if not 0 < value < 1:
        raise UserError(f"alpha must be strictly between 0 and 1, got {alpha}")
    return value


def conformal_rank(n: int, alpha: float | str | Fraction) -> int:
    """k = ⌈(n + 1)(1 - α)⌉ in exact integer arithmetic (may exceed n)."""
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    level = 1 - alpha_fraction(alpha)
    return -((-(n + 1) * level.numerator) // level.denominator)


def conformal_q_hat(scores: Sequence[float] | FloatArray, alpha: float | str | Fraction) -> float:
    """The k-th smallest score, k = :func:`conformal_rank`; +∞ when k > n."""
    values = np.asarray(scores, dtype=np.float64)
    k = conformal_rank(len(values), alpha)
    if k > len(values):
        return math.inf
    return float(np.partition(values, k - 1)[k - 1])


def coverage(c: FloatArray, c_hat: FloatArray, q_hat: float) -> float:
    """Share of states with |c - ĉ| <= q̂."""
    return float(np.mean(np.abs(c - c_hat) <= q_hat)) if len(c) else math.nan


def r_squared(c: FloatArray, c_hat: FloatArray) -> float:
    """Raw R² = 1 - SS_res / SS_tot about the mean of ``c`` (NaN when c is constant)."""
    total = float(np.sum((c - np.mean(c)) ** 2)) if len(c) else 0.0
    if total == 0.0:
        return math.nan
    return 1.0 - float(np.sum((c - c_hat) ** 2)) / total


def split_indices(n: int, split: int, seed: int, base_seed: int = 0) -> tuple[list[int], list[int]]:
    """A random 50/50 partition of ``range(n)``: n // 2 calibration indices, the rest test."""
    order = Draws("sgrgym-seeker-calibration-split", base_seed, split, seed).prefix_shuffle(n, n)
    return order[: n // 2], order[n // 2 :]


class PartitionResult(BaseModel):
    """One calibration/test partition: q̂, its rank k, test coverage and raw test R²."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    split: int
    seed: int
    n_calibration: int
    n_test: int
    rank: int
    q_hat: float
    coverage: float
    r2: float
    constant: float | None = None  # the fitted calibration mean (constant estimator)


class ProtocolSummary(BaseModel):
    """Section 3.3's numbers: mean ± std across the split-level means of the partitions."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    alpha: float
    splits: int
    seeds: int
    n_states: int
    n_calibration: int
    n_test: int
    q_hat: float
    q_hat_std: float
    r2: float
    r2_std: float
    coverage: float
    coverage_std: float


class ProtocolResult(ProtocolSummary):
    """The protocol's summary with every partition behind it."""

    partitions: list[PartitionResult]


def _rounded(value: float) -> float:
    """``value`` rounded to :data:`ROUND` decimals (+∞ and NaN unchanged)."""
    return value if not math.isfinite(value) else round(value, ROUND)


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample std (ddof = 1; 0 for one value); +∞ mean gives a NaN std."""
    if any(math.isinf(v) for v in values):
        return math.inf, math.nan
    mean = fmean(values)
    spread = stdev(values) if len(values) > 1 else 0.0
    return round(mean, ROUND), round(spread, ROUND)


def calibrate_partition(
    c: FloatArray, c_hat: FloatArray, calibration: Sequence[int], test: Sequence[int],
    alpha: float | str | Fraction, fit_mean: bool = False,
) -> tuple[float, float, float, int, float | None]:  # fmt: skip
    """(q̂, test coverage, test R², k, fitted constant) for one partition."""
    cal = np.asarray(calibration, dtype=np.intp)
    tst = np.asarray(test, dtype=np.intp)
    constant = None
    if fit_mean:
        constant = clamp_ratio(float(np.mean(c[cal]))) if len(cal) else 0.5
        c_hat = np.full_like(c, constant)
    scores = np.abs(c[cal] - c_hat[cal])
    q_hat = conformal_q_hat(scores, alpha)
    return (
        q_hat, coverage(c[tst], c_hat[tst], q_hat), r_squared(c[tst], c_hat[tst]),
        conformal_rank(len(cal), alpha), constant,
    )  # fmt: skip


def run_protocol(
    c: Sequence[float] | FloatArray,
    c_hat: Sequence[float] | FloatArray,
    alpha: float | str | Fraction = ALPHA,
    *,
    splits: int = SPLITS,
    seeds: int = SEEDS,
    base_seed: int = 0,
    fit_mean: bool = False,
) -> ProtocolResult:
    """Split conformal over ``splits`` × ``seeds`` random partitions (section 3.3)."""
    true = np.asarray(c, dtype=np.float64)
    estimated = np.asarray(c_hat, dtype=np.float64)
    if true.shape != estimated.shape or true.ndim != 1:
        raise ValueError(f"c and ĉ must be 1-D of one length: {true.shape} vs {estimated.shape}")
    if splits < 1 or seeds < 1:
        raise UserError(f"need at least one split and one seed, got {splits} and {seeds}")
    n = len(true)
    partitions: list[PartitionResult] = []
    for split in range(splits):
        for seed in range(seeds):
            cal, test = split_indices(n, split, seed, base_seed)
            q_hat, cov, r2, rank, constant = calibrate_partition(
                true, estimated, cal, test, alpha, fit_mean
            )
            partitions.append(
                PartitionResult(
                    split=split, seed=seed, n_calibration=len(cal), n_test=len(test), rank=rank,
                    q_hat=q_hat, coverage=cov, r2=r2, constant=constant,
                )
            )  # fmt: skip
    by_split = [[p for p in partitions if p.split == s] for s in range(splits)]
    q_hat, q_std = _mean_std([fmean([p.q_hat for p in ps]) for ps in by_split])
    r2, r2_std = _mean_std([fmean([p.r2 for p in ps]) for ps in by_split])
    cov, cov_std = _mean_std([fmean([p.coverage for p in ps]) for ps in by_split])
    return ProtocolResult(
        alpha=float(alpha_fraction(alpha)), splits=splits, seeds=seeds, n_states=n,
        n_calibration=n // 2, n_test=n - n // 2, q_hat=q_hat, q_hat_std=q_std, r2=r2,
        r2_std=r2_std, coverage=cov, coverage_std=cov_std, partitions=partitions,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# Calibrated stopping (figure 2d)


class EpisodeTrace(BaseModel):
    """An episode run to the horizon: c and ĉ after each step."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_id: str
    seed: int
    completeness: tuple[float, ...]
    c_hat: tuple[float, ...]


def trace_episode(
    env: SeekerEnv, agent: SeekerAgent, estimate: Callable[[EpisodeState], float],
    doc_id: str, seed: int, render: Renderer = dedup_belief,
) -> EpisodeTrace:  # fmt: skip
    """Run one episode to the horizon, recording c and ĉ after every step."""
    env.reset(doc_id, seed)
    state = env.state
    assert state is not None
    rng = random.Random(episode_seed(seed, doc_id))
    c: list[float] = []
    c_hat: list[float] = []
    while not state.done:
        env.step(agent.queries(state, render(state), rng))
        c.append(round(state.completeness, ROUND))
        c_hat.append(estimate(state))
    return EpisodeTrace(doc_id=doc_id, seed=seed, completeness=tuple(c), c_hat=tuple(c_hat))


def stop_step(c_hat: Sequence[float], q_hat: float, delta: float) -> int:
    """The first step t (1-based) with ĉ_t - q̂ >= δ, else the horizon ``len(c_hat)``."""
    for t, value in enumerate(c_hat, start=1):
        if value - q_hat >= delta - STOP_TOLERANCE:
            return t
    return len(c_hat)


class StoppingResult(BaseModel):
    """Calibrated stopping at one δ, against running every episode to the horizon."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    delta: float
    q_hat: float
    episodes: int
    horizon: int
    stopped_early: float  # share of episodes stopped before the horizon
    mean_stop_step: float
    steps_saved: float  # mean M - t
    steps_saved_share: float  # steps saved / M
    completeness_at_horizon: float
    completeness_at_stop: float
    completeness_lost: float  # mean c_M - c_t
    interval_coverage: float  # share of episode states with |c - ĉ| <= q̂ (no guarantee)


def evaluate_stopping(traces: Sequence[EpisodeTrace], q_hat: float, delta: float) -> StoppingResult:
    """Where calibrated stopping would have stopped each traced episode, and what it cost."""
    if not traces:
        raise UserError("no episodes to evaluate calibrated stopping on")
    horizon = len(traces[0].completeness)
    stops = [stop_step(t.c_hat, q_hat, delta) for t in traces]
    at_stop = [t.completeness[s - 1] for t, s in zip(traces, stops, strict=True)]
    at_end = [t.completeness[-1] for t in traces]
    pairs = [(c, h) for t in traces for c, h in zip(t.completeness, t.c_hat, strict=True)]
    covered = sum(1 for c, h in pairs if abs(c - h) <= q_hat)
    return StoppingResult(
        delta=delta, q_hat=_rounded(q_hat), episodes=len(traces), horizon=horizon,
        stopped_early=round(fmean([s < horizon for s in stops]), ROUND),
        mean_stop_step=round(fmean(stops), ROUND),
        steps_saved=round(fmean([horizon - s for s in stops]), ROUND),
        steps_saved_share=round(fmean([(horizon - s) / horizon for s in stops]), ROUND),
        completeness_at_horizon=round(fmean(at_end), ROUND),
        completeness_at_stop=round(fmean(at_stop), ROUND),
        completeness_lost=round(fmean([e - s for e, s in zip(at_end, at_stop, strict=True)]),
                                ROUND),
        interval_coverage=round(covered / len(pairs), ROUND),
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# One estimator end to end


class CalibrationReport(ProtocolSummary):
    """Table 4's numbers for one estimator, with what they were computed from."""

    estimator: str
    estimator_id: str
    corpus: str
    interval_width: int
    seed: int
    pool_sha256: str
    q_hat_full_pool: float  # q̂ calibrated on every pool state (used for stopping)
    estimates_computed: int
    estimates_cached: int
    stopping: list[StoppingResult] = []


class Calibration(BaseModel):
    """A report with the per-state pairs and partitions behind it (for the output files)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    report: CalibrationReport
    protocol: ProtocolResult
    c: list[float]
    c_hat: list[float]  # per state; the full-pool mean for the constant estimator
    q_hat_full_pool: float  # exact (the report rounds it)


def calibrate_estimator(
    corpus: Corpus,
    pool: BeliefPool,
    estimator: CompletenessEstimator,
    cache: EstimateCache,
    alpha: float | str | Fraction = ALPHA,
    *,
    splits: int = SPLITS,
    seeds: int = SEEDS,
    progress: Progress | None = None,
) -> Calibration:
    """Estimate every pool state once (cached), then run the section 3.3 protocol."""
    beliefs = pool_beliefs(corpus, pool)
    computed, hits = cache.computed, cache.hits
    c_hat: list[float] = []
    for i, belief in enumerate(beliefs, start=1):
        c_hat.append(cache.estimate(estimator, belief))
        if progress and (i % 25 == 0 or i == len(beliefs)):
            progress(i, len(beliefs), f"{estimator.name} estimates")
    c = pool.completeness()
    fit = estimator.fits_calibration_mean
    if fit:
        c_hat = [clamp_ratio(float(np.mean(c)))] * len(c) if len(c) else []
    protocol = run_protocol(c, c_hat, alpha, splits=splits, seeds=seeds, base_seed=pool.seed,
                            fit_mean=fit)  # fmt: skip
    q_full = conformal_q_hat(np.abs(c - np.asarray(c_hat, dtype=np.float64)), alpha)
    report = CalibrationReport(
        **protocol.model_dump(exclude={"partitions"}),
        estimator=estimator.name, estimator_id=estimator.id, corpus=corpus.name,
        interval_width=pool.interval_width, seed=pool.seed, pool_sha256=pool.sha256,
        q_hat_full_pool=_rounded(q_full), estimates_computed=cache.computed - computed,
        estimates_cached=cache.hits - hits,
    )  # fmt: skip
    return Calibration(
        report=report, protocol=protocol, c=[float(x) for x in c], c_hat=c_hat,
        q_hat_full_pool=q_full,
    )  # fmt: skip


def stopping_estimate(
    estimator: CompletenessEstimator, cache: EstimateCache, calibration: Calibration
) -> Callable[[EpisodeState], float]:
    """ĉ of an episode state: the estimator's (cached), or the pool mean for ``constant``."""
    if estimator.fits_calibration_mean:
        value = calibration.c_hat[0] if calibration.c_hat else 0.5
        return lambda state: value
    return lambda state: cache.estimate(estimator, visible_belief(state))


def trace_episodes(
    env: SeekerEnv, agent: SeekerAgent, estimate: Callable[[EpisodeState], float],
    doc_ids: Sequence[str], seeds: int = 1, progress: Progress | None = None,
) -> list[EpisodeTrace]:  # fmt: skip
    """Every (document, seed) episode traced to the horizon."""
    traces = []
    total = len(doc_ids) * seeds
    for seed in range(seeds):
        for doc_id in doc_ids:
            traces.append(trace_episode(env, agent, estimate, doc_id, seed))
            if progress:
                progress(len(traces), total, f"episodes ({doc_id})")
    return traces


# --------------------------------------------------------------------------------------------
# Output


def _fmt(value: float, digits: int = 3) -> str:
    if math.isinf(value):
        return "inf"
    if math.isnan(value):
        return "nan"
    return f"{value:.{digits}f}"


def render_table(reports: Sequence[CalibrationReport]) -> str:
    """A table shaped like the paper's table 4: q̂ ± std, R² ± std, coverage per estimator."""
    if not reports:
        return ""
    first = reports[0]
    rows = [
        [
            r.estimator,
            f"{_fmt(r.q_hat)} ± {_fmt(r.q_hat_std)}",
            f"{_fmt(r.r2)} ± {_fmt(r.r2_std)}",
            f"{_fmt(r.coverage)} ± {_fmt(r.coverage_std)}",
            str(r.n_states),
        ]
        for r in reports
    ]
    title = (
        f"{first.corpus}: α = {first.alpha:g}, Δ = {first.interval_width}, "
        f"{first.splits} splits × {first.seeds} seeds"
    )
    return format_table(
        ["Estimator", "q̂", "R²", "Coverage", "States"], rows, groups=[("", 1), (title, 4)]
    )


def render_stopping(reports: Sequence[CalibrationReport]) -> str:
    """Calibrated stopping per estimator and δ against running to the horizon."""
    rows = [
        [
            r.estimator, f"{s.delta:g}", _fmt(s.q_hat), f"{100 * s.stopped_early:.1f}",
            f"{s.mean_stop_step:.2f}", f"{s.steps_saved:.2f}",
            f"{100 * s.completeness_at_horizon:.1f}", f"{100 * s.completeness_at_stop:.1f}",
            f"{100 * s.completeness_lost:.1f}", f"{100 * s.interval_coverage:.1f}",
        ]
        for r in reports
        for s in r.stopping
    ]  # fmt: skip
    if not rows:
        return ""
    header = ["Estimator", "δ", "q̂", "Early %", "Stop step", "Saved", "c(M) %", "c(stop) %",
              "Lost %", "Covered %"]  # fmt: skip
    return format_table(header, rows)


def _record(model: BaseModel) -> object:
    """A model as plain JSON data (+∞ and NaN as the strings "Infinity" and "NaN")."""
    return json.loads(model.model_dump_json())


def _write_lines(path: Path, records: Sequence[object]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(jsonl_line(r) for r in records), encoding="utf-8")
    tmp.replace(path)


def _number(value: float) -> float | str:
    """A float for JSON: rounded, or "Infinity" / "NaN"."""
    if math.isinf(value):
        return "Infinity"
    if math.isnan(value):
        return "NaN"
    return round(value, ROUND)


def write_outputs(
    out_dir: Path, pool: BeliefPool, calibration: Calibration,
    traces: Sequence[EpisodeTrace] = (),
) -> Path:  # fmt: skip
    """Write ``pool.jsonl`` and, under ``<estimator>/``: ``report.json``, ``pairs.jsonl``
    (c, ĉ and score per state: the scatter), ``scores.json`` (sorted scores: the histogram),
    ``partitions.jsonl`` and ``episodes.jsonl`` (stopping traces). Returns the folder."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pool_file = out_dir / "pool.jsonl"
    tmp = pool_file.with_name("pool.jsonl.tmp")
    tmp.write_bytes(pool.to_bytes())
    tmp.replace(pool_file)
    report = calibration.report
    folder = out_dir / report.estimator
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "report.json.tmp"
    tmp.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(folder / "report.json")
    scores = [abs(c - h) for c, h in zip(calibration.c, calibration.c_hat, strict=True)]
    _write_lines(
        folder / "pairs.jsonl",
        [
            {"doc_id": s.doc_id, "interval": s.interval, "n_passages": s.n_passages,
             "retrieved": len(s.retrieved), "c": round(c, ROUND), "c_hat": round(h, ROUND),
             "score": round(e, ROUND)}
            for s, c, h, e in zip(pool.states, calibration.c, calibration.c_hat, scores,
                                  strict=True)
        ],
    )  # fmt: skip
    summary = {
        "estimator": report.estimator_id,
        "alpha": report.alpha,
        "scores": sorted(round(e, ROUND) for e in scores),
        "q_hat_full_pool": _number(report.q_hat_full_pool),
        "q_hat_by_partition": [_number(p.q_hat) for p in calibration.protocol.partitions],
    }
    _write_lines(folder / "scores.json", [summary])
    _write_lines(folder / "partitions.jsonl",
                 [_record(p) for p in calibration.protocol.partitions])  # fmt: skip
    if traces:
        _write_lines(folder / "episodes.jsonl", [_record(t) for t in traces])
    return folder


class CalibrationCard(BaseModel):
    """The run card of a ``calibrate --out`` folder: every option that shapes the results."""

    options: dict[str, object]
    corpus_file_sha256: str
    sgrgym_version: str = __version__


@contextmanager
def calibration_folder(options: CalibrateOptions) -> Iterator[Callable[[], None]]:
    """With ``--out``: the locked run folder of these options (refused if it holds another
    run; the previous results are removed first); yields the call that marks it complete."""
    if options.out is None:
        yield lambda: None
        return
    card = CalibrationCard(
        options=options.model_dump(mode="json", exclude={"out", "query_cache", "estimate_cache"}),
        corpus_file_sha256=sha256_bytes(read_bytes(options.corpus_file, "corpus file")),
    )
    with open_run_folder(options.out, card, finals=("pool.jsonl", *options.estimators)) as folder:
        yield folder.complete


# --------------------------------------------------------------------------------------------
# The `sgrgym seeker calibrate` pipeline


class CalibrateOptions(BaseModel):
    """Everything ``sgrgym seeker calibrate`` needs (paths already resolved)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    corpus_file: Path
    store_dir: Path
    model: str = "minilm-l6-onnx"
    query_cache: Path | None = None
    estimators: tuple[str, ...] = ("constant", "abstract-coverage", "visible-count")
    alpha: float = ALPHA
    interval_width: int | None = None  # None: the corpus' Δ (INTERVAL_WIDTHS)
    seed: int = 0
    splits: int = SPLITS
    seeds: int = SEEDS
    stopping: bool = True
    stop_deltas: tuple[float, ...] = STOP_DELTAS
    agent: str = "sentences"
    steps: int = Field(default=10, ge=1)
    episode_seeds: int = Field(default=1, ge=1)
    estimate_cache: Path | None = None
    out: Path | None = None


def open_embedder(model: str, query_cache: Path | None) -> CachedEmbedder:
    """The pinned embedder behind a query cache (in memory unless a file is given)."""
    return CachedEmbedder(load_embedder(model), QueryCache(query_cache or Path(":memory:")))


def open_store(corpus: Corpus, store_dir: Path, embedder: Embedder) -> PassageStore:
    """The verified passage store of ``corpus``, checked against the corpus and embedder."""
    store = PassageStore.open(store_dir)
    if store.manifest.corpus_sha256 != corpus_sha256(corpus):
        raise UserError(
            f"{store_dir} was built from another version of corpus {corpus.name!r}; rebuild "
            "the corpus (sgrgym seeker build-corpus) or the store (sgrgym seeker build-store)"
        )
    if store.manifest.model_id != embedder.model_id:
        raise UserError(
            f"{store_dir} holds {store.manifest.model_id} vectors, the embedder is "
            f"{embedder.model_id}"
        )
    return store


def prime_passage_vectors(embedder: CachedEmbedder, corpus: Corpus, store: PassageStore) -> int:
    """Put the store's passage vectors in the query cache (they are embed(text) of the same
    model, checked by model id and content hash): no passage is embedded again."""
    count = 0
    for document in corpus.documents:
        ids, matrix = store.matrix(document.id)
        if ids != [p.id for p in document.passages]:
            raise UserError(f"{document.id}: the store's passages differ from the corpus'")
        embedder.cache.put_many(embedder.model_id, [p.text for p in document.passages], matrix)
        count += len(ids)
    return count


def run_calibration(
    options: CalibrateOptions, progress: Progress | None = None
) -> list[CalibrationReport]:
    """Pool, estimates, protocol and (optionally) calibrated stopping for each estimator."""
    corpus = load_pinned_corpus(options.corpus_file, options.store_dir, False)
    width = options.interval_width
    if width is None:
        width = interval_width_for(corpus.name)
    alpha_fraction(options.alpha)
    needs_vectors = options.stopping or "abstract-coverage" in options.estimators
    embedder = open_embedder(options.model, options.query_cache) if needs_vectors else None
    store = open_store(corpus, options.store_dir, embedder) if embedder else None
    if embedder is not None and store is not None:
        prime_passage_vectors(embedder, corpus, store)
    estimators = [make_estimator(name, embedder) for name in options.estimators]
    pool = build_pool(corpus, width, options.seed)
    cache = EstimateCache(options.estimate_cache)
    env = None
    if options.stopping and embedder is not None and store is not None:
        env = SeekerEnv(corpus, store, embedder.embed, None, options.steps)
    reports = []
    for estimator in estimators:
        result = calibrate_estimator(corpus, pool, estimator, cache, options.alpha,
                                     splits=options.splits, seeds=options.seeds,
                                     progress=progress)  # fmt: skip
        traces: list[EpisodeTrace] = []
        if env is not None:
            estimate = stopping_estimate(estimator, cache, result)
            doc_ids = [d.id for d in corpus.documents]
            traces = trace_episodes(env, make_agent(options.agent), estimate, doc_ids,
                                    options.episode_seeds, progress)  # fmt: skip
            q_hat = result.q_hat_full_pool
            stopping = [evaluate_stopping(traces, q_hat, d) for d in options.stop_deltas]
            result = result.model_copy(
                update={"report": result.report.model_copy(update={"stopping": stopping})}
            )
        if options.out is not None:
            write_outputs(options.out, pool, result, traces)
        reports.append(result.report)
    return reports
