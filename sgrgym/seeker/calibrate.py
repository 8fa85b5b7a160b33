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

**Protocol** (section 3.3): "3 random splits, each averaged over 10 random seeds", reported as
mean ± std across the 3 split-level means (std with ddof = 1). ``splits-x-seeds`` (the default,
:data:`PAPER_PROTOCOL`): each split s is one random 50/50 calibration/test partition of the
pool; within it, seed j scores the estimator's estimates made with seed j (the LLM estimator is
called with that seed and the configured temperature). A deterministic estimator gives the
same estimates for every seed (``estimator_seeded: false`` in the report), so its within-split
spread is 0. ``resampled-partitions`` (a named alternative) draws a new partition for every
(split, seed). The ``constant`` estimator is refit (mean c of the calibration split) in every
partition. Estimates are cached per (estimator, state, seed).

**Unreadable estimates**: an LLM reply without a usable ratio is counted (``parse_failures``,
per state and seed) and handled by the declared ``failure_rule``: ``worst`` (the default)
keeps the state and scores it as the worst possible estimate, the end of [0, 1] farthest from
its c (so q̂ covers the estimator including its failures); ``exclude`` drops the state from
that seed's calibration and test sets. A failure never becomes ĉ = 0 silently. The estimator
sees the deduplicated belief (``dedup``: passages numbered in retrieval order, never by their
position in the document, which would bound N) unless ``estimate_belief`` says otherwise; the
report names the rendering used.

**Calibrated stopping** (figure 2d, section 2.2 "Horizon"): an episode ends after the first
step t whose belief gives ĉ_t - q̂ >= δ (with a 1e-12 tolerance for float round-off), else at
the horizon M. The rule runs inside the episode (:class:`CalibratedStop` as the environment's
stop rule). q̂ is calibrated on the whole synthetic pool with seed-0 estimates (the episodes are
the test data). Judged where it stops, per δ, against the same episodes run to the horizon:
how many episodes stopped early, the share of stops with c >= δ (the event the interval
guarantees for exchangeable states; episode states are not exchangeable with the synthetic
ones, so here it is measured, not guaranteed), steps saved (M - t), the agent's belief tokens
saved (characters / 4 of the steps not taken), and completeness lost (c_M - c_t). δ is not given
in the paper: the grid 0.05, 0.1, 0.2, 0.3 is ours.
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

from sgrgym.core import defaults
from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_bytes
from sgrgym.core.inputs import read_bytes
from sgrgym.core.io import jsonl_line, write_atomic
from sgrgym.core.numbers import exact_mean, fixed
from sgrgym.core.output import Progress
from sgrgym.core.table import format_table
from sgrgym.core.version import __version__
from sgrgym.runs.folder import open_run_folder
from sgrgym.seeker.agents import AgentSetup, SeekerAgent, make_agent
from sgrgym.seeker.belief import Renderer, belief_renderer, dedup_belief
from sgrgym.seeker.corpus import Corpus, Document, corpus_sha256
from sgrgym.seeker.embed import (
    CachedEmbedder,
    Embedder,
    QueryCache,
    load_embedder,
    recorded_embedder,
)
from sgrgym.seeker.env import EpisodeState, SeekerEnv
from sgrgym.seeker.estimators import (
    CompletenessEstimator,
    EstimateCache,
    EstimatorSetup,
    LLMEstimator,
    LLMEstimatorOptions,
    VisibleBelief,
    clamp_ratio,
    make_estimator,
    visible_belief,
)
from sgrgym.seeker.pinned import load_pinned_corpus
from sgrgym.seeker.records import CalibrationPair, PartitionResult
from sgrgym.seeker.run import episode_seed
from sgrgym.seeker.stopping import STOP_TOLERANCE, fires, stop_step
from sgrgym.seeker.store import PassageStore, theta_note

FloatArray = npt.NDArray[np.float64]

ENCYCLOPEDIC_WIDTH = 10  # appendix B.3: Δ = 10 for Wikipedia
SURVEY_WIDTH = 15  # appendix B.3: Δ = 15 for ML Surveys
INTERVAL_WIDTHS = {
    "djangodocs": ENCYCLOPEDIC_WIDTH,
    "pydocs": ENCYCLOPEDIC_WIDTH,
    "wikipedia": ENCYCLOPEDIC_WIDTH,
    "ml-surveys": SURVEY_WIDTH,
}
SPLITS = 3  # section 3.3
SEEDS = 10  # section 3.3
ALPHA = 0.1  # section 3.3: target coverage 1 - α = 90%
PAPER_PROTOCOL = "splits-x-seeds"  # section 3.3: 3 splits, 10 estimator seeds within each
PROTOCOLS = (PAPER_PROTOCOL, "resampled-partitions")
FAILURE_RULES = ("worst", "exclude")
DEFAULT_FAILURE_RULE = "worst"
ESTIMATE_BELIEF = "dedup"  # what the estimator sees (section 3.3: dedup trajectory)
STOP_DELTAS = (0.05, 0.1, 0.2, 0.3)  # ours: the paper gives no δ
ROUND = 6


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
                doc_id=document.id,
                interval=j,
                remaining_low=low,
                remaining_high=high,
                remaining=remaining,
                n_passages=n,
                retrieved=tuple(document.passages[i].id for i in chosen),
            )
        )
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
        header = {
            "corpus": self.corpus,
            "seed": self.seed,
            "interval_width": self.interval_width,
            "states": len(self.states),
        }
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
    center = exact_mean(c.tolist()) if len(c) else 0.0
    total = math.fsum(((c - center) ** 2).tolist())
    if total == 0.0:
        return math.nan
    return 1.0 - math.fsum(((c - c_hat) ** 2).tolist()) / total


def split_indices(n: int, split: int, seed: int, base_seed: int = 0) -> tuple[list[int], list[int]]:
    """A random 50/50 partition of ``range(n)``: n // 2 calibration indices, the rest test."""
    order = Draws("sgrgym-seeker-calibration-split", base_seed, split, seed).prefix_shuffle(n, n)
    return order[: n // 2], order[n // 2 :]


def worst_estimates(c: FloatArray) -> FloatArray:
    """The worst estimate of each state: the end of [0, 1] farthest from its c."""
    return np.where(c >= 0.5, 0.0, 1.0)


class ProtocolSummary(BaseModel):
    """Section 3.3's numbers: mean ± std across the split-level means of the partitions."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    protocol: str
    failure_rule: str
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
    parse_failures: int  # (state, seed) estimates that could not be read, over all seeds


class ProtocolResult(ProtocolSummary):
    """The protocol's summary with every partition behind it."""

    partitions: list[PartitionResult]


def _rounded(value: float) -> float:
    """``value`` rounded to :data:`ROUND` decimals (+∞ and NaN unchanged)."""
    return value if not math.isfinite(value) else fixed(value, ROUND)


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample std (ddof = 1; 0 for one value); +∞ mean gives a NaN std, a NaN
    value (a seed without test states, a constant test c) NaN for both."""
    if any(math.isnan(v) for v in values):
        return math.nan, math.nan
    if any(math.isinf(v) for v in values):
        return math.inf, math.nan
    mean = fmean(values)
    spread = stdev(values) if len(values) > 1 else 0.0
    return fixed(mean, ROUND), fixed(spread, ROUND)


def calibrate_partition(
    c: FloatArray,
    c_hat: FloatArray,
    calibration: Sequence[int],
    test: Sequence[int],
    alpha: float | str | Fraction,
    fit_mean: bool = False,
) -> tuple[float, float, float, int, float | None]:
    """(q̂, test coverage, test R², k, fitted constant) for one partition."""
    cal = np.asarray(calibration, dtype=np.intp)
    tst = np.asarray(test, dtype=np.intp)
    constant = None
    if fit_mean:
        constant = clamp_ratio(exact_mean(c[cal].tolist())) if len(cal) else 0.5
        c_hat = np.full_like(c, constant)
    scores = np.abs(c[cal] - c_hat[cal])
    q_hat = conformal_q_hat(scores, alpha)
    return (
        q_hat,
        coverage(c[tst], c_hat[tst], q_hat),
        r_squared(c[tst], c_hat[tst]),
        conformal_rank(len(cal), alpha),
        constant,
    )


def apply_failure_rule(
    c: FloatArray, row: FloatArray, rule: str
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """(the estimates to score, which states take part) for one seed's row (NaN = failure).

    ``worst``: a failed state stays in and is scored as the worst estimate (the end of [0, 1]
    farthest from its c: score max(c, 1 - c)); ``exclude``: a failed state leaves this seed's
    calibration and test sets.
    """
    failed = np.isnan(row)
    if rule == "worst":
        return np.where(failed, worst_estimates(c), row), np.ones(len(row), dtype=bool)
    if rule == "exclude":
        return np.where(failed, 0.0, row), ~failed
    raise UserError(f"no failure rule {rule!r}; rules: {', '.join(FAILURE_RULES)}")


def run_protocol(
    c: Sequence[float] | FloatArray,
    c_hat: Sequence[float] | Sequence[Sequence[float]] | FloatArray,
    alpha: float | str | Fraction = ALPHA,
    *,
    splits: int = SPLITS,
    seeds: int = SEEDS,
    base_seed: int = 0,
    fit_mean: bool = False,
    protocol: str = PAPER_PROTOCOL,
    failure_rule: str = DEFAULT_FAILURE_RULE,
) -> ProtocolResult:
    """Split conformal over ``splits`` × ``seeds`` (section 3.3).

    ``c_hat`` is one row of estimates per seed (a single row is used for every seed: a
    deterministic estimator); NaN marks an estimate that could not be read. ``protocol``
    :data:`PAPER_PROTOCOL` (``splits-x-seeds``): each split is one random calibration/test
    partition and, within it, seed j scores the estimator's seed-j estimates.
    ``resampled-partitions``: every (split, seed) draws its own partition (the seeds then vary
    the partition as well as the estimates).
    """
    true = np.asarray(c, dtype=np.float64)
    estimated = np.asarray(c_hat, dtype=np.float64)
    if estimated.ndim == 1:
        estimated = np.tile(estimated, (seeds, 1))
    if true.ndim != 1 or estimated.shape != (seeds, len(true)):
        raise ValueError(f"c must be 1-D and ĉ (seeds, n): {true.shape} vs {estimated.shape}")
    if splits < 1 or seeds < 1:
        raise UserError(f"need at least one split and one seed, got {splits} and {seeds}")
    if protocol not in PROTOCOLS:
        raise UserError(f"no protocol {protocol!r}; protocols: {', '.join(PROTOCOLS)}")
    n = len(true)
    partitions: list[PartitionResult] = []
    for split in range(splits):
        for seed in range(seeds):
            inner = 0 if protocol == PAPER_PROTOCOL else seed
            cal, test = split_indices(n, split, inner, base_seed)
            row = estimated[seed]
            scored, keep = apply_failure_rule(true, row, failure_rule)
            cal = [i for i in cal if keep[i]]
            test = [i for i in test if keep[i]]
            q_hat, cov, r2, rank, constant = calibrate_partition(
                true, scored, cal, test, alpha, fit_mean
            )
            partitions.append(
                PartitionResult(
                    split=split,
                    seed=seed,
                    n_calibration=len(cal),
                    n_test=len(test),
                    rank=rank,
                    q_hat=q_hat,
                    coverage=cov,
                    r2=r2,
                    parse_failures=int(np.isnan(row).sum()),
                    constant=constant,
                )
            )
    by_split = [[p for p in partitions if p.split == s] for s in range(splits)]
    q_hat, q_std = _mean_std([fmean([p.q_hat for p in ps]) for ps in by_split])
    r2, r2_std = _mean_std([fmean([p.r2 for p in ps]) for ps in by_split])
    cov, cov_std = _mean_std([fmean([p.coverage for p in ps]) for ps in by_split])
    return ProtocolResult(
        protocol=protocol,
        failure_rule=failure_rule,
        alpha=float(alpha_fraction(alpha)),
        splits=splits,
        seeds=seeds,
        n_states=n,
        n_calibration=n // 2,
        n_test=n - n // 2,
        q_hat=q_hat,
        q_hat_std=q_std,
        r2=r2,
        r2_std=r2_std,
        coverage=cov,
        coverage_std=cov_std,
        parse_failures=int(np.isnan(estimated).sum()),
        partitions=partitions,
    )


# --------------------------------------------------------------------------------------------
# Calibrated stopping (figure 2d)


class EpisodeTrace(BaseModel):
    """An episode: c, ĉ (None: unreadable) and the agent's belief tokens after each step,
    and whether the stop rule ended it (``stopped``) before or at the horizon."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_id: str
    seed: int
    completeness: tuple[float, ...]
    c_hat: tuple[float | None, ...]
    belief_tokens: tuple[int, ...] = ()  # the agent's context per step (chars // 4)
    stopped: bool = False


class CalibratedStop:
    """The stop rule of figure 2d: stop after step t when ĉ_t - q̂ >= δ.

    Called by :class:`~sgrgym.seeker.env.SeekerEnv` after every step (``stop_rule``); an
    unreadable estimate never stops. ``estimates`` keeps ĉ of each step of the running episode.
    """

    def __init__(
        self, estimate: Callable[[EpisodeState], float | None], q_hat: float, delta: float
    ) -> None:
        self.estimate = estimate
        self.q_hat = q_hat
        self.delta = delta
        self.estimates: list[float | None] = []

    def __call__(self, state: EpisodeState) -> bool:
        if len(state.history) == 1:
            self.estimates = []
        value = self.estimate(state)
        self.estimates.append(value)
        return fires(value, self.q_hat, self.delta)


def trace_episode(
    env: SeekerEnv,
    agent: SeekerAgent,
    estimate: Callable[[EpisodeState], float | None],
    doc_id: str,
    seed: int,
    render: Renderer = dedup_belief,
) -> EpisodeTrace:
    """Run one episode until it ends (the horizon, or ``env.stop_rule``), recording c, ĉ and
    the agent's belief tokens after every step. With a :class:`CalibratedStop` as the env's
    rule, its estimates are reused (no second estimate per step)."""
    env.reset(doc_id, seed)
    state = env.state
    assert state is not None
    rng = random.Random(episode_seed(seed, doc_id))
    rule = env.stop_rule if isinstance(env.stop_rule, CalibratedStop) else None
    c: list[float] = []
    c_hat: list[float | None] = []
    tokens: list[int] = []
    while not state.done:
        belief = render(state)
        tokens.append(len(belief) // 4)
        env.step(agent.queries(state, belief, rng))
        c.append(fixed(state.completeness, ROUND))
        c_hat.append(rule.estimates[-1] if rule is not None else estimate(state))
    return EpisodeTrace(
        doc_id=doc_id,
        seed=seed,
        completeness=tuple(c),
        c_hat=tuple(c_hat),
        belief_tokens=tuple(tokens),
        stopped=state.stopped,
    )


class StoppingResult(BaseModel):
    """Calibrated stopping at one δ, judged where it stops (figure 2d), against running every
    episode to the horizon."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    delta: float
    q_hat: float
    episodes: int
    horizon: int
    stopped: int  # episodes the rule ended (at or before the horizon)
    stopped_early: int  # episodes the rule ended before the horizon
    stopped_early_share: float
    stops_with_c_at_least_delta: float  # share of the rule's stops with c >= δ (guaranteed)
    mean_stop_step: float
    steps_saved: float  # mean M - t over all episodes
    steps_saved_share: float  # steps saved / M
    tokens_saved: float  # mean belief tokens of the steps not taken, per episode
    tokens_saved_share: float  # of the horizon run's belief tokens
    completeness_at_horizon: float
    completeness_at_stop: float
    completeness_lost: float  # mean c_M - c_t
    interval_coverage: float  # share of horizon-run states with |c - ĉ| <= q̂ (no guarantee)


def _share(part: float, whole: float) -> float:
    return fixed(part / whole, ROUND) if whole else math.nan


def evaluate_stopping(
    full: Sequence[EpisodeTrace],
    q_hat: float,
    delta: float,
    stopped: Sequence[EpisodeTrace] | None = None,
) -> StoppingResult:
    """Where calibrated stopping stopped each episode and what it cost against ``full`` (the
    same episodes run to the horizon). ``stopped``: the episodes run with the rule inside
    (:class:`CalibratedStop` as the env's stop rule), in the order of ``full``; without them
    the stop is read off the full traces (the same step for a deterministic agent)."""
    if not full:
        raise UserError("no episodes to evaluate calibrated stopping on")
    horizon = len(full[0].completeness)
    if stopped is None:
        steps = [stop_step(t.c_hat, q_hat, delta) for t in full]
        fired = [fires(t.c_hat[s - 1], q_hat, delta) for t, s in zip(full, steps, strict=True)]
    else:
        if [(t.doc_id, t.seed) for t in stopped] != [(t.doc_id, t.seed) for t in full]:
            raise ValueError("stopped and full episodes differ")
        steps = [len(t.completeness) for t in stopped]
        fired = [t.stopped for t in stopped]
    at_stop = [t.completeness[s - 1] for t, s in zip(full, steps, strict=True)]
    at_end = [t.completeness[-1] for t in full]
    stop_c = [c for c, f in zip(at_stop, fired, strict=True) if f]
    full_tokens = [sum(t.belief_tokens) for t in full]
    saved_tokens = [sum(t.belief_tokens[s:]) for t, s in zip(full, steps, strict=True)]
    pairs = [(c, h) for t in full for c, h in zip(t.completeness, t.c_hat, strict=True)]
    covered = sum(1 for c, h in pairs if h is not None and abs(c - h) <= q_hat)
    early = sum(1 for s, f in zip(steps, fired, strict=True) if f and s < horizon)
    return StoppingResult(
        delta=delta,
        q_hat=_rounded(q_hat),
        episodes=len(full),
        horizon=horizon,
        stopped=sum(fired),
        stopped_early=early,
        stopped_early_share=_share(early, len(full)),
        stops_with_c_at_least_delta=_share(
            sum(1 for c in stop_c if c >= delta - STOP_TOLERANCE), len(stop_c)
        ),
        mean_stop_step=fixed(fmean(steps), ROUND),
        steps_saved=fixed(fmean([horizon - s for s in steps]), ROUND),
        steps_saved_share=fixed(fmean([(horizon - s) / horizon for s in steps]), ROUND),
        tokens_saved=fixed(fmean(saved_tokens), ROUND),
        tokens_saved_share=_share(sum(saved_tokens), sum(full_tokens)),
        completeness_at_horizon=fixed(fmean(at_end), ROUND),
        completeness_at_stop=fixed(fmean(at_stop), ROUND),
        completeness_lost=fixed(
            fmean([e - s for e, s in zip(at_end, at_stop, strict=True)]), ROUND
        ),
        interval_coverage=fixed(covered / len(pairs), ROUND),
    )


# --------------------------------------------------------------------------------------------
# One estimator end to end


class CalibrationReport(ProtocolSummary):
    """Table 4's numbers for one estimator, with what they were computed from."""

    estimator: str
    estimator_id: str
    estimator_seeded: bool  # False: deterministic, every seed gives the same estimates
    estimate_belief: str  # the belief rendering the estimator saw
    prompt_version: str | None = None  # LLM estimator: the prompt file and its sha256
    prompt_sha256: str | None = None
    llm: dict[str, object] | None = None  # requested/returned models, temperature, tokens
    corpus: str
    interval_width: int
    seed: int
    pool_sha256: str
    q_hat_full_pool: float  # q̂ calibrated on every pool state, seed 0 (used for stopping)
    estimates_computed: int
    estimates_cached: int
    stopping: list[StoppingResult] = []
    theta_note: str | None = None  # the stopping episodes' θ against the store's pinned one


class Calibration(BaseModel):
    """A report with the per-state pairs and partitions behind it (for the output files)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    report: CalibrationReport
    protocol: ProtocolResult
    c: list[float]
    c_hat: list[float | None]  # seed 0, per state (None: unreadable); constant: the pool mean
    c_hat_by_seed: list[list[float | None]] | None = None  # seeded estimators: every seed
    q_hat_full_pool: float  # exact (the report rounds it)


def _nan(values: Sequence[float | None]) -> list[float]:
    return [math.nan if v is None else v for v in values]


def llm_details(estimator: CompletenessEstimator) -> dict[str, object] | None:
    """What an LLM estimator spent and who answered (None for the other estimators)."""
    if not isinstance(estimator, LLMEstimator):
        return None
    return {
        "requested_model": estimator.chat.model,
        "returned_models": sorted(estimator.models),
        "temperature": estimator.temperature,
        "params": estimator.params,
        "calls": estimator.calls,
        "usage": dict(estimator.usage),
    }


def calibrate_estimator(
    corpus: Corpus,
    pool: BeliefPool,
    estimator: CompletenessEstimator,
    cache: EstimateCache,
    alpha: float | str | Fraction = ALPHA,
    *,
    splits: int = SPLITS,
    seeds: int = SEEDS,
    protocol: str = PAPER_PROTOCOL,
    failure_rule: str = DEFAULT_FAILURE_RULE,
    belief: str = ESTIMATE_BELIEF,
    progress: Progress | None = None,
) -> Calibration:
    """Estimate every pool state for every seed (cached; once for a deterministic estimator),
    then run the section 3.3 protocol."""
    if failure_rule not in FAILURE_RULES:
        raise UserError(f"no failure rule {failure_rule!r}; rules: {', '.join(FAILURE_RULES)}")
    beliefs = pool_beliefs(corpus, pool, belief_renderer(belief))
    computed, hits = cache.computed, cache.hits
    rows: list[list[float | None]] = []
    runs = seeds if estimator.seeded else 1
    for seed in range(runs):
        row: list[float | None] = []
        for i, visible in enumerate(beliefs, start=1):
            row.append(cache.estimate(estimator, visible, seed))
            if progress and (i % 25 == 0 or i == len(beliefs)):
                progress(i, len(beliefs), f"{estimator.name} estimates (seed {seed})")
        rows.append(row)
    c = pool.completeness()
    fit = estimator.fits_calibration_mean
    if fit:
        rows = [[clamp_ratio(exact_mean(c.tolist()))] * len(c) if len(c) else []]
    matrix = np.array([_nan(r) for r in rows], dtype=np.float64).reshape(len(rows), len(c))
    if len(rows) == 1:
        matrix = np.tile(matrix, (seeds, 1))
    result = run_protocol(
        c,
        matrix,
        alpha,
        splits=splits,
        seeds=seeds,
        base_seed=pool.seed,
        fit_mean=fit,
        protocol=protocol,
        failure_rule=failure_rule,
    )
    scored, keep = apply_failure_rule(c, matrix[0], failure_rule)
    q_full = conformal_q_hat(np.abs(c - scored)[keep], alpha)
    template = getattr(estimator, "template", None)
    report = CalibrationReport(
        **result.model_dump(exclude={"partitions"}),
        estimator=estimator.name,
        estimator_id=estimator.id,
        estimator_seeded=estimator.seeded,
        estimate_belief=belief,
        prompt_version=template.version if template is not None else None,
        prompt_sha256=template.sha256 if template is not None else None,
        llm=llm_details(estimator),
        corpus=corpus.name,
        interval_width=pool.interval_width,
        seed=pool.seed,
        pool_sha256=pool.sha256,
        q_hat_full_pool=_rounded(q_full),
        estimates_computed=cache.computed - computed,
        estimates_cached=cache.hits - hits,
    )
    return Calibration(
        report=report,
        protocol=result,
        c=[float(x) for x in c],
        c_hat=rows[0],
        c_hat_by_seed=rows if estimator.seeded else None,
        q_hat_full_pool=q_full,
    )


def stopping_estimate(
    estimator: CompletenessEstimator,
    cache: EstimateCache,
    calibration: Calibration,
    belief: str = ESTIMATE_BELIEF,
) -> Callable[[EpisodeState], float | None]:
    """ĉ of an episode state (seed 0, cached), or the pool mean for ``constant``; None when
    the estimate could not be read (the rule then never stops on it)."""
    if estimator.fits_calibration_mean:
        value = calibration.c_hat[0] if calibration.c_hat else 0.5
        return lambda state: value
    render = belief_renderer(belief)
    return lambda state: cache.estimate(estimator, visible_belief(state, render))


def trace_episodes(
    env: SeekerEnv,
    agent: SeekerAgent,
    estimate: Callable[[EpisodeState], float | None],
    doc_ids: Sequence[str],
    seeds: int = 1,
    progress: Progress | None = None,
) -> list[EpisodeTrace]:
    """Every (document, seed) episode traced until it ends (horizon or ``env.stop_rule``)."""
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
    """A table shaped like the paper's table 4: q̂ ± std, R² ± std, coverage per estimator,
    with whether the seeds vary the estimates and how many replies could not be read."""
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
            "sampled" if r.estimator_seeded else "identical",
            str(r.parse_failures),
        ]
        for r in reports
    ]
    title = (
        f"{first.corpus}: α = {first.alpha:g}, Δ = {first.interval_width}, "
        f"{first.splits} splits × {first.seeds} seeds"
    )
    table = format_table(
        ["Estimator", "q̂", "R²", "Coverage", "States", "Seeds", "Unparsed"],
        rows,
        groups=[("", 1), (title, 6)],
    )
    return (
        f"{table}\nprotocol {first.protocol}; the estimators saw belief "
        f"{first.estimate_belief}; unreadable estimates: {first.failure_rule}"
    )


def render_stopping(reports: Sequence[CalibrationReport]) -> str:
    """Calibrated stopping per estimator and δ, judged where it stops (figure 2d)."""
    rows = [
        [
            r.estimator,
            f"{s.delta:g}",
            _fmt(s.q_hat),
            f"{s.stopped_early}/{s.episodes}",
            _pct(s.stops_with_c_at_least_delta),
            f"{s.mean_stop_step:.2f}",
            f"{s.steps_saved:.2f}",
            f"{s.tokens_saved:.0f}",
            _pct(s.tokens_saved_share),
            _pct(s.completeness_at_horizon),
            _pct(s.completeness_at_stop),
            _pct(s.completeness_lost),
        ]
        for r in reports
        for s in r.stopping
    ]
    if not rows:
        return ""
    header = [
        "Estimator",
        "δ",
        "q̂",
        "Stopped early",
        "Stops c≥δ %",
        "Stop step",
        "Steps saved",
        "Tokens saved",
        "Tokens %",
        "c(M) %",
        "c(stop) %",
        "Lost %",
    ]
    return format_table(header, rows)


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.1f}"


def _record(model: BaseModel) -> object:
    """A model as plain JSON data (+∞ and NaN as the strings "Infinity" and "NaN")."""
    return json.loads(model.model_dump_json())


def _write_lines(path: Path, records: Sequence[object]) -> None:
    write_atomic(path, "".join(jsonl_line(r) for r in records))


def _number(value: float) -> float | str:
    """A float for JSON: rounded, or "Infinity" / "NaN"."""
    if math.isinf(value):
        return "Infinity"
    if math.isnan(value):
        return "NaN"
    return fixed(value, ROUND)


def _maybe(value: float | None) -> float | None:
    return None if value is None else fixed(value, ROUND)


def write_outputs(
    out_dir: Path,
    pool: BeliefPool,
    calibration: Calibration,
    traces: Sequence[EpisodeTrace] = (),
) -> Path:
    """Write ``pool.jsonl`` and, under ``<estimator>/``: ``report.json``, ``pairs.jsonl``
    (c, ĉ and score per state: the scatter), ``scores.json`` (sorted scores: the histogram),
    ``partitions.jsonl`` and ``episodes.jsonl`` (stopping traces). Returns the folder."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pool_file = out_dir / "pool.jsonl"
    write_atomic(pool_file, pool.to_bytes())
    report = calibration.report
    folder = out_dir / report.estimator
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "report.json", report.model_dump_json(indent=2) + "\n")
    scores = [
        None if h is None else abs(c - h)
        for c, h in zip(calibration.c, calibration.c_hat, strict=True)
    ]
    by_seed = calibration.c_hat_by_seed
    _write_lines(
        folder / "pairs.jsonl",
        [
            CalibrationPair(
                doc_id=s.doc_id,
                interval=s.interval,
                n_passages=s.n_passages,
                retrieved=len(s.retrieved),
                c=fixed(c, ROUND),
                c_hat=_maybe(h),
                score=_maybe(e),
                c_hat_by_seed=[_maybe(r[i]) for r in by_seed] if by_seed else None,
            ).data()
            for i, (s, c, h, e) in enumerate(
                zip(pool.states, calibration.c, calibration.c_hat, scores, strict=True)
            )
        ],
    )
    summary = {
        "estimator": report.estimator_id,
        "alpha": report.alpha,
        "scores": sorted(fixed(e, ROUND) for e in scores if e is not None),
        "q_hat_full_pool": _number(report.q_hat_full_pool),
        "q_hat_by_partition": [_number(p.q_hat) for p in calibration.protocol.partitions],
    }
    _write_lines(folder / "scores.json", [summary])
    _write_lines(folder / "partitions.jsonl", [_record(p) for p in calibration.protocol.partitions])
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
        folder.begin()  # the protocol writes its files straight into the folder
        yield folder.complete


# --------------------------------------------------------------------------------------------
# The `sgrgym seeker calibrate` pipeline


class CalibrateOptions(BaseModel):
    """Everything ``sgrgym seeker calibrate`` needs (paths already resolved)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    corpus_file: Path
    store_dir: Path
    model: str = defaults.EMBEDDER
    query_cache: Path | None = None
    estimators: tuple[str, ...] = ("constant", "abstract-coverage", "visible-count")
    alpha: float = ALPHA
    interval_width: int | None = None  # None: the corpus' Δ (INTERVAL_WIDTHS)
    seed: int = 0
    splits: int = SPLITS
    seeds: int = SEEDS
    protocol: str = PAPER_PROTOCOL
    failure_rule: str = DEFAULT_FAILURE_RULE
    estimate_belief: str = ESTIMATE_BELIEF
    stopping: bool = True
    stop_deltas: tuple[float, ...] = STOP_DELTAS
    agent: str = "sentences"
    queries_per_step: int = Field(default=defaults.QUERIES_PER_STEP, ge=1)  # the env's budget
    steps: int = Field(default=10, ge=1)
    theta: float | None = None  # None: the store's pinned θ
    episode_seeds: int = Field(default=1, ge=1)
    estimate_cache: Path | None = None
    out: Path | None = None
    llm: LLMEstimatorOptions | None = None


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


def run_stopping(
    env: SeekerEnv,
    options: CalibrateOptions,
    estimator: CompletenessEstimator,
    cache: EstimateCache,
    calibration: Calibration,
    progress: Progress | None = None,
) -> tuple[list[EpisodeTrace], list[StoppingResult]]:
    """Every episode to the horizon, then again per δ with :class:`CalibratedStop` inside the
    environment (the episode ends when the rule fires), judged against the horizon runs."""
    estimate = stopping_estimate(estimator, cache, calibration, options.estimate_belief)
    doc_ids = [d.id for d in env.corpus.documents]
    agent = make_agent(options.agent, AgentSetup(per_step=options.queries_per_step))
    env.stop_rule = None
    full = trace_episodes(env, agent, estimate, doc_ids, options.episode_seeds, progress)
    q_hat = calibration.q_hat_full_pool
    results = []
    for delta in options.stop_deltas:
        env.stop_rule = CalibratedStop(estimate, q_hat, delta)
        try:
            live = trace_episodes(env, agent, estimate, doc_ids, options.episode_seeds)
        finally:
            env.stop_rule = None
        results.append(evaluate_stopping(full, q_hat, delta, live))
    return full, results


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
    embedder: Embedder | None = None
    store = None
    recorded = None
    if needs_vectors:
        live = open_embedder(options.model, options.query_cache)
        store = open_store(corpus, options.store_dir, live)
        prime_passage_vectors(live, corpus, store)
        embedder = live
        if options.llm is not None:  # a model's run: its vectors are recorded beside its calls
            embedder = recorded = recorded_embedder(
                options.model, options.llm.cache, options.llm.mode, lambda: live
            )
    try:
        return _calibrate_all(options, corpus, width, embedder, store, progress)
    finally:
        if recorded is not None:
            recorded.close()


def _calibrate_all(
    options: CalibrateOptions,
    corpus: Corpus,
    width: int,
    embedder: Embedder | None,
    store: PassageStore | None,
    progress: Progress | None,
) -> list[CalibrationReport]:
    belief_renderer(options.estimate_belief)
    estimators: list[CompletenessEstimator] = []
    setup = EstimatorSetup(embedder=embedder, llm=options.llm)
    estimators = [make_estimator(name, setup) for name in options.estimators]
    pool = build_pool(corpus, width, options.seed)
    cache = EstimateCache(options.estimate_cache)
    env = None
    if options.stopping and embedder is not None and store is not None:
        env = SeekerEnv(
            corpus,
            store,
            embedder.embed,
            options.theta,
            options.steps,
            queries_per_step=options.queries_per_step,
        )
    reports = []
    for estimator in estimators:
        result = calibrate_estimator(
            corpus,
            pool,
            estimator,
            cache,
            options.alpha,
            splits=options.splits,
            seeds=options.seeds,
            protocol=options.protocol,
            failure_rule=options.failure_rule,
            belief=options.estimate_belief,
            progress=progress,
        )
        traces: list[EpisodeTrace] = []
        if env is not None:
            traces, stopping = run_stopping(env, options, estimator, cache, result, progress)
            note = theta_note(env.theta, env.store)
            report = result.report.model_copy(
                update={"stopping": stopping, "llm": llm_details(estimator), "theta_note": note}
            )
            result = result.model_copy(update={"report": report})
        if options.out is not None:
            write_outputs(options.out, pool, result, traces)
        reports.append(result.report)
    return reports
