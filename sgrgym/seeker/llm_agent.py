"""The SeekerGym LLM agent: the rendered belief in, the next step's queries (and ĉ) out.

Each step the agent fills its prompt file (``prompts/queries-v1.json``, or
``queries-estimate-v1.json`` when it also estimates completeness) with the belief the run
renders (trajectory, dedup or oracle: paper section 3.1) and the number of queries wanted,
asks the chat model through a :class:`~sgrgym.llm.usage.CallMeter`, and parses the reply
with :func:`parse_queries`. It asks for as many queries as the environment's budget allows
(``queries_per_step``, the same for every agent: section 2.3).

- **Robust parsing**: ``Query: ...`` lines, else a JSON list (or ``{"queries": [...]}``), else
  a numbered or bulleted list, else the reply's plain lines. A reply that yields no query
  (or, when ĉ is asked for, no readable ĉ) is *malformed*: the step goes on with what could
  be read (no query at all if nothing), the reason is kept in the episode record and the
  reply counts in :attr:`~sgrgym.llm.usage.LLMTotals.malformed_replies`. Never fatal.
- **ĉ and calibrated stopping** (sections 2.4 and 3.1, figure 2d): with ``estimate`` the same
  reply carries ĉ of the belief it was shown (:func:`~sgrgym.seeker.estimators.parse_completeness`
  on the reply without its query lines). With ``q_hat`` and ``delta`` the agent is the env's
  stop rule: after step t it asks for step t+1 at once and stops when ĉ_t - q̂ >= δ, so a
  stopping episode costs no extra call.
- **Seed**: the one sent with every request is ``seed`` if given (``--llm-seed``), else the
  episode's seed (explicit in every call record's ``params``).
"""

from __future__ import annotations

import copy
import json
import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from sgrgym.core import defaults
from sgrgym.core.errors import UserError
from sgrgym.llm.chat import CallRecord
from sgrgym.llm.usage import CallMeter, totals_of
from sgrgym.seeker.belief import Renderer
from sgrgym.seeker.env import EpisodeState, SeekerEnv
from sgrgym.seeker.estimators import PROMPTS_DIR, PromptTemplate, load_prompt, parse_completeness

if TYPE_CHECKING:
    from sgrgym.llm.settings import LLMOptions
    from sgrgym.seeker.embed import Embedder, RecordedEmbedder

QUERIES_PROMPT_FILE = PROMPTS_DIR / "queries-v1.json"
ESTIMATE_PROMPT_FILE = PROMPTS_DIR / "queries-estimate-v1.json"
MAX_QUERY_CHARS = 2_000  # as the Gymnasium action space (sgrgym.seeker.gym.MAX_QUERY)

_THINK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_QUERY_LINE = re.compile(
    r"^[ \t]*(?:[-*•][ \t]*|\d+[.)][ \t]*)?\**[ \t]*query[ \t]*\d*[ \t]*\**[ \t]*[:：]\**(.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_ITEM = re.compile(r"^[ \t]*(?:[-*•]|\d+[.)])[ \t]+(.+)$", re.MULTILINE)
_ESTIMATE_LINE = re.compile(r"^[ \t]*\**[ \t]*(?:completeness|estimate|ĉ|c_hat)\b", re.I)
_FENCE = re.compile(r"```[A-Za-z]*")


class LLMAgentSettings(BaseModel):
    """What the LLM agent asks for (all of it goes into the run card)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    queries_per_step: int = Field(default=defaults.QUERIES_PER_STEP, ge=1)  # the env's budget
    estimate: bool = False  # also ask for ĉ each step
    q_hat: float | None = None  # calibrated stopping: stop when ĉ - q̂ >= δ (needs estimate)
    delta: float | None = None
    seed: int | None = None  # None: the episode's seed
    sampling: dict[str, float | int] = {}  # temperature, top_p, max_tokens as given
    prompt: Path | None = None  # None: the packaged prompt for the estimate setting

    @property
    def stopping(self) -> bool:
        return self.q_hat is not None and self.delta is not None


@dataclass(frozen=True)
class ParsedReply:
    queries: list[str]
    form: str  # query-lines | json | list | lines | none
    c_hat: float | None = None
    malformed: str = ""  # why the reply could not be used ("" when it could)


def _clean(query: str) -> str:
    query = query.strip().strip("*_`").strip()
    if len(query) >= 2 and query[0] == query[-1] and query[0] in "\"'":
        query = query[1:-1].strip()
    return " ".join(query.split())[:MAX_QUERY_CHARS]


def _json_queries(text: str) -> list[str]:
    for start, end in (("[", "]"), ("{", "}")):
        i, j = text.find(start), text.rfind(end)
        if i < 0 or j <= i:
            continue
        try:
            value = json.loads(text[i : j + 1])
        except ValueError:
            continue
        if isinstance(value, dict):
            value = value.get("queries")
        if isinstance(value, list):
            return [q for q in value if isinstance(q, str)]
    return []


def _queries(text: str) -> tuple[list[str], str]:
    lines = [m.group(1) for m in _QUERY_LINE.finditer(text)]
    if lines:
        return lines, "query-lines"
    found = _json_queries(text)
    if found:
        return found, "json"
    items = [m.group(1) for m in _ITEM.finditer(text) if not _ESTIMATE_LINE.match(m.group(1))]
    if items:
        return items, "list"
    plain = [
        line
        for line in _FENCE.sub("", text).splitlines()
        if line.strip() and not _ESTIMATE_LINE.match(line) and not line.rstrip().endswith(":")
    ]
    return plain, "lines" if plain else "none"


def parse_queries(reply: str, count: int, estimate: bool = False) -> ParsedReply:
    """At most ``count`` distinct queries from ``reply`` (and ĉ when ``estimate``).

    ``<think>`` blocks are dropped first (and an unclosed one with all after it).
    """
    lower = reply.lower()
    if "</think>" in lower:
        reply = reply[lower.rfind("</think>") + len("</think>") :]
    elif "<think>" in lower:
        reply = reply[: lower.find("<think>")]
    text = _THINK.sub(" ", reply)
    raw, form = _queries(text)
    queries = [q for q in dict.fromkeys(_clean(q) for q in raw) if q][:count]
    c_hat = None
    if estimate:
        c_hat = parse_completeness(_QUERY_LINE.sub("", text))
    malformed = ""
    if not queries:
        malformed = "no query in the reply"
    elif estimate and c_hat is None:
        malformed = "no readable completeness estimate in the reply"
    return ParsedReply(queries, form if queries else "none", c_hat, malformed)


@dataclass
class _Episode:
    calls: list[CallRecord] = field(default_factory=list)
    replies: list[ParsedReply] = field(default_factory=list)


class LLMSeekerAgent:
    """Queries from a chat model; one call per step; safe to share between ``--jobs`` threads
    (each episode's calls are kept apart by document and seed)."""

    name = "llm"

    def __init__(
        self,
        meter: CallMeter,
        render: Renderer,
        settings: LLMAgentSettings,
        embedder: RecordedEmbedder | None = None,
    ) -> None:
        self.meter = meter
        self.render = render
        self.settings = settings
        self.embedder = embedder  # its query vectors, recorded beside its calls
        default = ESTIMATE_PROMPT_FILE if settings.estimate else QUERIES_PROMPT_FILE
        self.template: PromptTemplate = load_prompt(settings.prompt or default)
        self._lock = threading.Lock()
        self._episodes: dict[tuple[str, int], _Episode] = {}

    def write_log(self, out_dir: Path) -> None:
        """The call log (mode, cache hits, network attempts) beside the run's results."""
        self.meter.write_log(out_dir)

    def close(self) -> None:
        """Close the chat client (and its recorded cache) and the recorded query vectors."""
        self.meter.client.close()
        if self.embedder is not None:
            self.embedder.close()

    def attach(self, env: SeekerEnv) -> SeekerEnv:
        """A shallow copy of ``env`` embedding through the recorded query vectors, stopped by
        this agent's rule under calibrated stopping."""
        if self.settings.queries_per_step > env.queries_per_step:
            raise UserError(
                f"the llm agent asks for {self.settings.queries_per_step} queries a step, over "
                f"the environment's budget of {env.queries_per_step}"
            )
        own = copy.copy(env)
        if self.embedder is not None:
            own.embed = self.embedder.embed
        if self.settings.stopping:
            own.stop_rule = self.stop_rule
        return own

    def card(self) -> dict[str, Any]:
        """The run card's ``llm`` part: model, sampling, seed rule, prompt and price sha256."""
        client = self.meter.client
        return {
            "model": client.model,
            "base_url": client.base_url,
            "settings": self.settings.model_dump(mode="json", exclude={"prompt"}),
            "seed_rule": "--llm-seed" if self.settings.seed is not None else "episode seed",
            "prompts": {self.template.version: self.template.sha256},
            "prices_sha256": self.meter.prices.sha256,
        }

    def _episode(self, state: EpisodeState) -> _Episode:
        key = (state.document.id, state.seed)
        with self._lock:
            episode = self._episodes.get(key)
            if episode is None or (not state.history and episode.replies):
                episode = self._episodes[key] = _Episode()  # a new (or restarted) episode
            return episode

    def _reply(self, state: EpisodeState, belief: str) -> ParsedReply:
        episode = self._episode(state)
        step = len(state.history)
        if step < len(episode.replies):  # asked already (by the stop rule after the last step)
            return episode.replies[step]
        count = self.settings.queries_per_step
        messages = self.template.fill(belief, {"count": str(count)})
        seed = state.seed if self.settings.seed is None else self.settings.seed
        label = f"{state.document.id} seed {state.seed} step {step + 1}"
        reply, record = self.meter.complete(
            messages, episode=label, seed=seed, **self.settings.sampling
        )
        parsed = parse_queries(reply.text, count, self.settings.estimate)
        episode.calls.append(record)
        episode.replies.append(parsed)
        return parsed

    def queries(self, state: EpisodeState, belief: str, rng: random.Random) -> list[str]:
        return list(self._reply(state, belief).queries)

    def stop_rule(self, state: EpisodeState) -> bool:
        """The env's stop rule (with ``q_hat`` and ``delta``): ĉ of the belief after this step,
        from the reply that also holds the next step's queries; never at the horizon."""
        from sgrgym.seeker.stopping import fires

        q_hat, delta = self.settings.q_hat, self.settings.delta
        if q_hat is None or delta is None or len(state.history) >= state.horizon:
            return False
        return fires(self._reply(state, self.render(state)).c_hat, q_hat, delta)

    def episode_llm(self, state: EpisodeState) -> dict[str, Any]:
        """The episode's calls, what each reply gave and their totals (then forgotten)."""
        with self._lock:
            episode = self._episodes.pop((state.document.id, state.seed), _Episode())
        malformed = sum(1 for r in episode.replies if r.malformed)
        replies = [
            {
                "form": r.form,
                "queries": len(r.queries),
                "malformed": r.malformed,
                **({"c_hat": r.c_hat} if self.settings.estimate else {}),
            }
            for r in episode.replies
        ]
        return {
            "calls": [c.model_dump(mode="json") for c in episode.calls],
            "replies": replies,
            "stopped": state.stopped,
            "totals": totals_of(episode.calls, malformed).model_dump(mode="json"),
        }


@dataclass(frozen=True)
class LLMSeekerOptions:
    """The ``llm`` agent's chat model and what it asks for (``seeker run --llm-*``, ``[llm]``)."""

    chat: LLMOptions
    settings: LLMAgentSettings


def make_llm_agent(
    options: LLMSeekerOptions,
    render: Renderer,
    embedder_name: str,
    load_embedder: Callable[[], Embedder],
) -> LLMSeekerAgent:
    """The SeekerGym LLM agent over the recorded chat client ``options`` name; its query
    vectors are recorded in the same file under the pinned embedder ``embedder_name``
    (``load_embedder`` is called only to fill a recording)."""
    from sgrgym.llm.options import open_meter
    from sgrgym.seeker.embed import recorded_embedder

    chat = options.chat
    recorded = recorded_embedder(embedder_name, chat.cache, chat.mode, load_embedder)
    try:
        meter = open_meter(chat)
    except BaseException:
        recorded.close()
        raise
    return LLMSeekerAgent(meter, render, options.settings, recorded)
