"""Completeness estimators for SeekerGym (paper sections 2.4 and 3.1, figure 2c-d).

An estimator predicts the completeness ratio ĉ ∈ [0, 1] of a belief state: the fraction of the
document's goal passages retrieved so far (true value c = retrieved / N, paper section 2.4). It
sees only a :class:`VisibleBelief`: the title, the abstract, the texts of the retrieved passages
and the deduplicated-trajectory rendering of them (paper section 3.3 uses that representation
for all completeness experiments). It never sees N, the hidden passages or the true c.

Estimators plug in through :class:`CompletenessEstimator`:

- ``constant`` (:class:`ConstantEstimator`): the calibration split's mean completeness, the same
  for every state. Its raw out-of-sample R² is about 0 by construction: the floor to beat.
- ``abstract-coverage`` (:class:`AbstractCoverageEstimator`): how much of the abstract the
  retrieved passages cover in embedding space. Each abstract sentence scores its best cosine
  with a visible passage, mapped linearly from ``low`` (0.30: unrelated) to ``high`` (0.80:
  near-paraphrase) onto [0, 1] and clipped; ĉ is the mean over the sentences. Vectors come from
  the pinned embedder (through a :class:`~sgrgym.seeker.embed.CachedEmbedder`). The two anchors
  are round values set once on the demo corpus, not fit on any split.
- ``visible-count`` (:class:`VisibleCountEstimator`): ĉ = k / (k + K) for k visible passages; K
  is a fixed prior for "half seen" (default 30, about half the demo corpus' mean of 60
  passages per document). It uses no embeddings.
- ``llm`` (:class:`LLMEstimator`): prompts a chat model through the recorded client of
  :mod:`sgrgym.llm.chat` with the versioned prompt file ``prompts/completeness-v1.json``
  (:data:`COMPLETENESS_PROMPT`; its sha256 goes into every result), called with the protocol's
  seed and the configured temperature, and reads the ratio with :func:`parse_completeness`.
  A reply without a usable ratio is a parse failure: ``estimate`` returns None and the
  calibration applies its declared failure rule (never a silent ĉ = 0).

Deterministic estimators (``seeded = False``) give the same estimate for every seed; the LLM
estimator is ``seeded``. Estimates are rounded to 6 decimals (last-bit BLAS differences never
change output bytes) and cached per (estimator id, state key, seed) in an
:class:`EstimateCache` (seed None for deterministic estimators), optionally persisted as JSONL,
so a calibration protocol never computes an estimate twice.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_bytes
from sgrgym.core.numbers import exact_mean, fixed
from sgrgym.core.registry import Registry
from sgrgym.llm.settings import LLMOptions as ChatOptions
from sgrgym.runs.folder import read_log
from sgrgym.seeker.belief import Renderer, dedup_belief
from sgrgym.seeker.embed import Embedder, FloatMatrix
from sgrgym.seeker.env import EpisodeState
from sgrgym.seeker.retrieval import best_cosines

if TYPE_CHECKING:
    from sgrgym.llm.chat import ChatReply

DECIMALS = 6

# --------------------------------------------------------------------------------------------
# What an estimator may see


@dataclass(frozen=True)
class VisibleBelief:
    """The part of a belief state an estimator may see (never N nor the hidden passages).

    ``passages`` are the retrieved passages' texts in retrieval order; ``text`` is the rendered
    belief (deduplicated trajectory by default) that an LLM estimator is shown.
    """

    title: str
    abstract: str
    passages: tuple[str, ...]
    text: str

    @property
    def key(self) -> str:
        """sha256 of the rendered belief: equal beliefs share one cached estimate."""
        return sha256_bytes(self.text.encode("utf-8"))


def visible_belief(state: EpisodeState, render: Renderer = dedup_belief) -> VisibleBelief:
    """The visible part of ``state``, rendered with ``render`` (deduplicated trajectory)."""
    texts = {p.id: p.text for p in state.document.passages}
    return VisibleBelief(
        title=state.document.title,
        abstract=state.document.abstract,
        passages=tuple(texts[pid] for pid in state.retrieved),
        text=render(state),
    )


class CompletenessEstimator(Protocol):
    """Predicts the completeness ratio ĉ ∈ [0, 1] of a visible belief.

    ``id`` names the estimator and its settings (the estimate cache's key); an estimator with
    ``fits_calibration_mean`` predicts the calibration split's mean c instead (``constant``);
    ``seeded`` says whether the estimate depends on ``seed`` (an LLM's sampling).
    """

    name: str
    id: str
    fits_calibration_mean: bool
    seeded: bool

    def estimate(self, belief: VisibleBelief, seed: int = 0) -> float | None:
        """ĉ for ``belief``, in [0, 1]; None when the estimate could not be read."""
        ...


def clamp_ratio(value: float) -> float:
    """``value`` clipped to [0, 1] and rounded to :data:`DECIMALS` decimals."""
    return fixed(min(1.0, max(0.0, float(value))), DECIMALS)


# --------------------------------------------------------------------------------------------
# Non-LLM baselines


class ConstantEstimator:
    """The calibration split's mean completeness for every state (``value`` until fitted)."""

    name = "constant"
    id = "constant"
    fits_calibration_mean = True
    seeded = False

    def __init__(self, value: float = 0.5) -> None:
        self.value = clamp_ratio(value)

    def estimate(self, belief: VisibleBelief, seed: int = 0) -> float | None:
        return self.value


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")


def abstract_sentences(abstract: str) -> list[str]:
    """The abstract split into sentences (after ``.``, ``!`` or ``?`` and before a capital)."""
    return [s.strip() for s in _SENTENCE.split(abstract) if s.strip()]


class AbstractCoverageEstimator:
    """Mean over abstract sentences of a linear ramp of their best cosine to a visible passage.

    A sentence whose best cosine is at most ``low`` counts 0, at least ``high`` counts 1, and
    linearly in between; no visible passage gives 0. Cosines are computed in float64.
    """

    name = "abstract-coverage"
    fits_calibration_mean = False
    seeded = False

    def __init__(self, embedder: Embedder, low: float = 0.30, high: float = 0.80) -> None:
        if not -1.0 <= low < high <= 1.0:
            raise UserError(f"abstract-coverage needs -1 <= low < high <= 1, got {low}, {high}")
        self.embedder = embedder
        self.low = low
        self.high = high
        self.id = f"{self.name}[{embedder.model_id};low={low:g};high={high:g}]"

    def _vectors(self, texts: Sequence[str]) -> FloatMatrix:
        return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)

    def estimate(self, belief: VisibleBelief, seed: int = 0) -> float | None:
        sentences = abstract_sentences(belief.abstract)
        if not sentences or not belief.passages:
            return 0.0
        best = best_cosines(self._vectors(belief.passages), self._vectors(sentences))
        ramp = [min(max((b - self.low) / (self.high - self.low), 0.0), 1.0) for b in best]
        return clamp_ratio(exact_mean(ramp))


class VisibleCountEstimator:
    """ĉ = k / (k + ``half``) for k visible passages: ``half`` visible passages read as 0.5."""

    name = "visible-count"
    fits_calibration_mean = False
    seeded = False

    def __init__(self, half: int = 30) -> None:
        if half < 1:
            raise UserError(f"visible-count needs half >= 1, got {half}")
        self.half = half
        self.id = f"{self.name}[half={half}]"

    def estimate(self, belief: VisibleBelief, seed: int = 0) -> float | None:
        k = len(belief.passages)
        return clamp_ratio(k / (k + self.half))


# --------------------------------------------------------------------------------------------
# LLM estimator: interface, prompt, parser


BELIEF_SLOT = "{belief}"


class PromptTemplate(BaseModel):
    """A system message and a user message with one ``{belief}`` slot (filled verbatim)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str = "inline"
    system: str
    user: str
    file_sha256: str | None = None  # sha256 of the prompt file's bytes (None: not from a file)

    @field_validator("user")
    @classmethod
    def _has_slot(cls, value: str) -> str:
        if value.count(BELIEF_SLOT) != 1:
            raise ValueError(f"the user message needs exactly one {BELIEF_SLOT} slot")
        return value

    def messages(self, belief: VisibleBelief) -> list[dict[str, str]]:
        """The chat messages for ``belief`` (no format-string parsing: braces stay as they are)."""
        return self.fill(belief.text)

    def fill(self, belief: str, slots: Mapping[str, str] | None = None) -> list[dict[str, str]]:
        """The chat messages with the rendered ``belief`` and any other ``{name}`` slots filled
        (each by plain replacement, the belief last, so its text is never read as a slot)."""
        system, user = self.system, self.user
        for name, value in (slots or {}).items():
            system = system.replace("{" + name + "}", value)
            user = user.replace("{" + name + "}", value)
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": user.replace(BELIEF_SLOT, belief)},
        ]

    @property
    def sha256(self) -> str:
        """The prompt file's sha256, or that of the two messages for an inline template."""
        if self.file_sha256 is not None:
            return self.file_sha256
        return sha256_bytes(json.dumps([self.system, self.user]).encode("utf-8"))


PROMPTS_DIR = Path(__file__).parent / "prompts"
COMPLETENESS_PROMPT_FILE = PROMPTS_DIR / "completeness-v1.json"


def load_prompt(path: Path) -> PromptTemplate:
    """A prompt file: JSON with ``version``, ``system`` and ``user`` (one ``{belief}`` slot)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read the prompt file ({exc.strerror})") from None
    try:
        fields = json.loads(data)
        if not isinstance(fields, dict):
            raise ValueError("not a JSON object")
        return PromptTemplate(**fields, file_sha256=sha256_bytes(data))
    except (ValueError, TypeError) as exc:
        raise UserError(f"{path}: not a prompt file (version, system, user): {exc}") from None


COMPLETENESS_PROMPT = load_prompt(COMPLETENESS_PROMPT_FILE)

PARSE_FAILED: None = None
"""What :func:`parse_completeness` returns for a reply without a usable ratio."""

_NUMBER = r"(?<![\w.])(?:[-+])?(?:0,\d+|\d+(?:\.\d+)?|\.\d+)(?![\w])"
_PERCENT = r"\s*(?:%|percent\b|per\s?cent\b)"
_WORDS = {
    "half": 0.5,
    "a third": 1 / 3,
    "one third": 1 / 3,
    "two thirds": 2 / 3,
    "a quarter": 0.25,
    "one quarter": 0.25,
    "three quarters": 0.75,
}
_QUANTITY = re.compile(
    rf"(?P<num>{_NUMBER})\s*(?:/|\bout\s+of\b|\bof\b)\s*(?P<den>{_NUMBER})(?!{_PERCENT})"
    rf"|(?P<pct>{_NUMBER}){_PERCENT}"
    rf"|(?P<bare>{_NUMBER})"
    r"|\b(?P<word>half|a\s+third|one\s+third|two\s+thirds|a\s+quarter|one\s+quarter"
    r"|three\s+quarters)\b",
    re.IGNORECASE,
)
_THINK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_LABEL = re.compile(
    r"(?:completeness|complete|estimate|estimated|ratio|answer|score|c_hat|ĉ)[^\d\n]{0,30}$",
    re.IGNORECASE,
)
_RANGE = re.compile(r"^\s*(?:-|–|—|to|and)\s*$", re.IGNORECASE)
_BETWEEN = re.compile(r"between\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class _Quantity:
    value: float | None  # None: not a usable ratio (x/0, a bare number above 100)
    strong: bool  # a ratio form: decimal in [0, 1], percent, fraction, or word
    percent: bool
    bare: bool
    start: int
    end: int


def _number(text: str) -> float:
    return float(text.replace(",", "."))


def _bare(x: float) -> tuple[float | None, bool]:
    """A bare number: a ratio in [0, 1] (strong), below 0 clamped to 0, in (1, 2) clamped to
    1, in [2, 100] read as a percentage (weak), above 100 unusable."""
    if x < 0.0:
        return 0.0, True
    if x <= 1.0:
        return x, True
    if x < 2.0:
        return 1.0, True
    if x <= 100.0:
        return x / 100.0, False
    return None, False


def _quantity(match: re.Match[str]) -> _Quantity:
    start, end = match.span()
    if match["num"] is not None:
        den = _number(match["den"])
        value = _number(match["num"]) / den if den > 0 else None
        return _Quantity(value, True, False, False, start, end)
    if match["pct"] is not None:
        return _Quantity(_number(match["pct"]) / 100.0, True, True, False, start, end)
    if match["word"] is not None:
        words = " ".join(match["word"].lower().split())
        return _Quantity(_WORDS[words], True, False, False, start, end)
    value, strong = _bare(_number(match["bare"]))
    return _Quantity(value, strong, False, True, start, end)


def _merge_ranges(text: str, found: list[_Quantity]) -> list[_Quantity]:
    """``0.3-0.4``, ``30 to 40%`` and ``between 0.3 and 0.4`` become their midpoint."""
    out: list[_Quantity] = []
    for q in found:
        prev = out[-1] if out else None
        gap = text[prev.end : q.start] if prev else ""
        if prev is not None and _RANGE.match(gap):
            is_and = gap.strip().lower() == "and"
            if not is_and or _BETWEEN.search(text[: prev.start]):
                low = prev.value
                if q.percent and prev.bare:  # "30-40%": both ends are percentages
                    low = _number(text[prev.start : prev.end]) / 100.0
                if low is not None and q.value is not None:
                    out[-1] = _Quantity(
                        (low + q.value) / 2, True, q.percent, False, prev.start, q.end
                    )
                    continue
        out.append(q)
    return out


def parse_completeness(reply: str) -> float | None:
    """The completeness ratio in a model's reply, clamped to [0, 1]; :data:`PARSE_FAILED`.

    Accepts ``0.4``, ``.4``, ``0,4``, ``40%``, ``40 percent``, ``2/5``, ``2 out of 5``,
    ``12 of 30``, ``half``, ``two thirds``, ranges (``0.3-0.4``, ``30 to 40%``, ``between 0.3
    and 0.4``: the midpoint), JSON (``{"completeness": 0.35}``) and Markdown emphasis.
    ``<think>…</think>`` blocks are ignored (an unclosed one and all after it too). Choice,
    in order: the last quantity that follows a label (completeness, estimate, ratio, answer,
    score); else the last ratio form (a decimal in [0, 1], a percentage, a fraction or a word);
    else a lone bare number in [2, 100] read as a percentage (``40`` → 0.4). A bare number in
    (1, 2) is clamped to 1, a negative one to 0. Several bare numbers without a label, a number
    above 100, ``x/0`` or no number at all give :data:`PARSE_FAILED` (None).
    """
    lower = reply.lower()
    if "</think>" in lower:  # the answer follows the last closed reasoning block
        reply = reply[lower.rfind("</think>") + len("</think>") :]
    elif "<think>" in lower:  # reasoning cut off before any answer
        reply = reply[: lower.find("<think>")]
    text = _THINK.sub(" ", reply).replace("**", "").replace("`", "").replace("__", "")
    found = _merge_ranges(text, [_quantity(m) for m in _QUANTITY.finditer(text)])
    usable = [q for q in found if q.value is not None]
    labeled = [q for q in usable if _LABEL.search(text[max(0, q.start - 40) : q.start])]
    strong = [q for q in usable if q.strong]
    if labeled:
        chosen = labeled[-1]
    elif strong:
        chosen = strong[-1]
    elif len(found) == 1 and len(usable) == 1:
        chosen = usable[0]
    else:
        return PARSE_FAILED
    assert chosen.value is not None
    if not math.isfinite(chosen.value):
        return PARSE_FAILED
    return clamp_ratio(chosen.value)


class Chat(Protocol):
    """A chat model as :class:`sgrgym.llm.chat.ChatClient` offers it."""

    model: str

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        seed: int | None = None,
        temperature: float | None = None,
        **params: Any,
    ) -> ChatReply: ...


class LLMEstimator:
    """ĉ from a chat model: the prompt file in, :func:`parse_completeness` out.

    Each call passes the protocol's ``seed`` and the configured ``temperature`` (and ``params``,
    e.g. ``max_tokens``). A reply without a usable ratio counts in ``parse_failures`` and
    estimates None. The id names the model, the prompt's sha256 and the sampling settings, so
    cached estimates never mix them. ``calls``, ``usage`` and ``models`` (ids the server
    returned) record what was spent and who answered.
    """

    name = "llm"
    fits_calibration_mean = False
    seeded = True

    def __init__(
        self,
        chat: Chat,
        *,
        template: PromptTemplate = COMPLETENESS_PROMPT,
        temperature: float = 0.0,
        params: dict[str, Any] | None = None,
        parser: Callable[[str], float | None] = parse_completeness,
    ) -> None:
        if not 0.0 <= temperature <= 2.0:
            raise UserError(f"temperature must be in [0, 2], got {temperature}")
        self.chat = chat
        self.template = template
        self.temperature = temperature
        self.params = dict(params or {})
        self.parser = parser
        self.parse_failures = 0
        self.calls = 0
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        self.models: set[str] = set()
        extra = "".join(f";{k}={v}" for k, v in sorted(self.params.items()))
        self.id = (
            f"{self.name}[{chat.model};prompt={template.sha256[:12]};"
            f"temperature={temperature:g}{extra}]"
        )

    def estimate(self, belief: VisibleBelief, seed: int = 0) -> float | None:
        reply = self.chat.complete(
            self.template.messages(belief),
            seed=seed,
            temperature=self.temperature,
            **self.params,
        )
        self.calls += 1
        self.models.add(reply.model)
        for key in self.usage:
            self.usage[key] += getattr(reply.usage, key)
        value = self.parser(reply.text)
        if value is None:
            self.parse_failures += 1
            return None
        return clamp_ratio(value)


# --------------------------------------------------------------------------------------------
# Registry and cache


class LLMEstimatorOptions(ChatOptions):
    """The chat model behind ``--estimator llm``: the shared ``--llm-*`` options
    (:mod:`sgrgym.llm.options`) and the estimator's prompt file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = 0.0
    prompt: Path | None = None  # None: the packaged completeness-v1 prompt


@dataclass(frozen=True)
class EstimatorSetup:
    """What an estimator is built from: the pinned embedder (abstract-coverage) and the chat
    model (llm)."""

    embedder: Embedder | None = None
    llm: LLMEstimatorOptions | None = None


def _abstract_coverage(setup: EstimatorSetup) -> CompletenessEstimator:
    if setup.embedder is None:
        raise UserError("abstract-coverage needs the pinned embedder")
    return AbstractCoverageEstimator(setup.embedder)


def _llm(setup: EstimatorSetup) -> CompletenessEstimator:
    """The LLM estimator over a recorded chat client."""
    from sgrgym.llm.options import open_client

    options = setup.llm
    if options is None:
        raise UserError(
            "the llm estimator needs a chat model from the LLM layer: pass --model, "
            "--base-url and --llm-cache (in Python: LLMEstimator(ChatClient(...)))"
        )
    template = COMPLETENESS_PROMPT if options.prompt is None else load_prompt(options.prompt)
    params = {k: v for k, v in options.sampling().items() if k != "temperature"}
    return LLMEstimator(
        open_client(options), template=template, temperature=options.temperature, params=params
    )


EstimatorFactory = Callable[[EstimatorSetup], CompletenessEstimator]
ESTIMATORS: Registry[EstimatorFactory] = Registry("estimator")
ESTIMATORS.register("constant", lambda _: ConstantEstimator(), "the calibration split's mean c")
ESTIMATORS.register("abstract-coverage", _abstract_coverage, "cosines of the abstract")
ESTIMATORS.register("visible-count", lambda _: VisibleCountEstimator(), "k / (k + half)")
ESTIMATORS.register("llm", _llm, "a chat model's ĉ from the dedup belief (section 3.3)")


def make_estimator(name: str, setup: EstimatorSetup | None = None) -> CompletenessEstimator:
    """An estimator by name (``abstract-coverage`` needs ``setup.embedder``, ``llm`` its
    ``setup.llm``)."""
    return ESTIMATORS.get(name)(setup or EstimatorSetup())


class _CachedEstimate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    estimator: str
    key: str
    seed: int | None = None  # None: a deterministic estimator (one estimate for every seed)
    c_hat: float | None  # None: the reply could not be parsed


CacheKey = tuple[str, str, int | None]
_MISSING = object()


class EstimateCache:
    """Estimates by (estimator id, state key, seed); with ``path``, read at start and appended.

    A deterministic estimator's estimates are stored once under seed None. A parse failure is
    stored too (as null), so a replayed protocol counts the same failures. ``computed`` counts
    the estimates actually computed, ``hits`` those served from the cache.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.computed = 0
        self.hits = 0
        self._values: dict[CacheKey, float | None] = {}
        if path is not None:
            # A last line without its newline was cut short by a kill: it is dropped, once
            # every complete line has been read as a cached estimate (any other file is left
            # as it is: refused, never rewritten).
            items: list[_CachedEstimate] = []

            def check(number: int, record: object) -> None:
                try:
                    items.append(_CachedEstimate.model_validate(record))
                except ValueError:
                    raise UserError(
                        f"{path} line {number}: not a cached estimate "
                        '({"estimator": ..., "key": ..., "c_hat": ...}); name a new file or '
                        "one this command wrote"
                    ) from None

            read_log(path, "estimate cache", check=check)
            for item in items:
                self._values.setdefault((item.estimator, item.key, item.seed), item.c_hat)

    def __len__(self) -> int:
        return len(self._values)

    def get(self, estimator_id: str, key: str, seed: int | None = None) -> object:
        """The cached estimate (a float or None), or a sentinel object when absent."""
        return self._values.get((estimator_id, key, seed), _MISSING)

    def put(self, estimator_id: str, key: str, seed: int | None, value: float | None) -> None:
        """Store a new estimate (and append it to the file); an existing one stays."""
        if (estimator_id, key, seed) in self._values:
            return
        self._values[(estimator_id, key, seed)] = value
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            line = _CachedEstimate(estimator=estimator_id, key=key, seed=seed, c_hat=value)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line.model_dump_json() + "\n")

    def estimate(
        self, estimator: CompletenessEstimator, belief: VisibleBelief, seed: int = 0
    ) -> float | None:
        """The cached estimate of ``belief`` for ``seed``, computed (once) when missing."""
        slot = seed if estimator.seeded else None
        found = self.get(estimator.id, belief.key, slot)
        if found is not _MISSING:
            self.hits += 1
            return found  # type: ignore[return-value]
        raw = estimator.estimate(belief, seed)
        value = None if raw is None else clamp_ratio(raw)
        self.computed += 1
        self.put(estimator.id, belief.key, slot, value)
        return value

    def estimate_all(
        self, estimator: CompletenessEstimator, beliefs: Iterable[VisibleBelief], seed: int = 0
    ) -> list[float | None]:
        return [self.estimate(estimator, b, seed) for b in beliefs]
