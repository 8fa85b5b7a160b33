"""The configuration of ``sgrgym run``: which benchmarks, agents, models, seeds and budgets.

Without ``--config`` the embedded default (:data:`DEFAULT_CONFIG_TOML`) runs: SeekerGym with
the built-in agents × the three belief representations (section 3.1) × :data:`DEFAULT_SEEDS`
seeds, the calibration protocol (section 3.3: 3 splits × 10 estimator seeds), and SGR with the
oracle, default, search-only and random agents. A ``--config`` TOML file overrides any of it;
an unknown key or a wrong value is a :class:`~sgrgym.core.errors.UserError` naming the file and key.
The config's canonical sha256 goes into the run card.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, ValidationError

from sgrgym.core import defaults
from sgrgym.core.argtypes import MAX_PER_STEP, MAX_SEED, MAX_SEEDS, MAX_STEPS, calendar_date
from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_json
from sgrgym.core.inputs import read_text
from sgrgym.sgr.llm_limits import DEFAULT_KEEP_RESULTS, DEFAULT_MAX_TURNS, DEFAULT_RESULT_CHARS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

# Ours: the paper averages over episodes; two seeds are the fewest that give a std over seeds
# and keep the default run within its two-minute goal (measured in docs/main-job.md).
DEFAULT_SEEDS = 2

# Every number finite (nan and inf refused), every flag a real true/false, and every count
# one a run can finish: the same ranges as the command line's (sgrgym.core.argtypes).
_STRICT = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
Seeds = Annotated[int, Field(ge=1, le=MAX_SEEDS)]
Steps = Annotated[int, Field(ge=1, le=MAX_STEPS)]
PerStep = Annotated[int, Field(ge=1, le=MAX_PER_STEP)]
Theta = Annotated[float, Field(gt=0.0, lt=1.0)]  # a cosine threshold (section 2.2)
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Seconds = Annotated[float, Field(gt=0, le=10_000_000)]
Date = Annotated[str, AfterValidator(calendar_date)]


class SeekerConfig(BaseModel):
    model_config = _STRICT

    enabled: StrictBool = True
    corpus: str = "demo"
    model: str = defaults.EMBEDDER
    agents: list[str] = ["sentences", "phrases", "belief-phrases", "oracle-text"]
    beliefs: list[str] = ["trajectory", "dedup", "oracle"]  # section 3.1
    seeds: Seeds = DEFAULT_SEEDS
    steps: Steps = 10  # horizon M (ours: the paper gives none)
    # the query budget, the same for every agent, the llm agent included (section 2.3; ours)
    queries_per_step: PerStep = defaults.QUERIES_PER_STEP
    theta: Theta | None = None  # None: the store's pinned θ
    docs: list[str] = []  # empty: every document


class CalibrationConfig(BaseModel):
    model_config = _STRICT

    enabled: StrictBool = True
    estimators: list[str] = ["constant", "abstract-coverage", "visible-count"]
    alpha: float = Field(default=0.1, gt=0.0, lt=1.0)  # section 3.3
    splits: int = Field(default=3, ge=1, le=1_000)  # section 3.3
    seeds: Seeds = 10  # section 3.3
    seed: Seed = 0
    stopping: StrictBool = True
    stop_deltas: list[Unit] = [0.05, 0.1, 0.2, 0.3]  # ours: the paper gives no δ
    agent: str = "sentences"
    steps: Steps = 10


class SgrConfig(BaseModel):
    model_config = _STRICT

    enabled: StrictBool = True
    pack: str = "demo"
    agents: list[str] = ["oracle", "default", "search-only", "random"]
    tasks: list[Path] = []  # empty: tasks/sgr/<site>/constraint.jsonl, goal.jsonl
    seed: Seed = 0
    random_steps: Steps = 4
    max_tool_calls: int | None = Field(default=None, ge=1, le=100_000)
    max_wall_s: Seconds = defaults.MAX_WALL_S
    stall_s: Seconds = defaults.STALL_S
    current_date: Date = defaults.CURRENT_DATE
    render: StrictBool = True


class LLMConfig(BaseModel):
    """An LLM agent for both benchmarks (the ``llm`` agent of ``seeker run`` and ``sgr run``):
    which model, where, how it samples, where its calls are recorded. Defaults as on the
    command line; the cache mode is not part of the run (a record and its replay are one)."""

    model_config = _STRICT

    model: str  # local:NAME: a model of `sgrgym llm serve`
    base_url: str | None = None  # None: the llm serve URL for local:NAME
    api_key_env: str = "OPENAI_API_KEY"
    cache: Path | None = None  # the recorded calls (requests-cache SQLite); needed to run
    mode: Literal["record", "replay", "refresh"] = "replay"
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: Seed | None = None  # None: each episode's seed
    seeker: StrictBool = True  # the SeekerGym LLM agent, over every belief in seeker.beliefs
    sgr: StrictBool = True  # the SGR LLM agent
    max_turns: int = Field(default=DEFAULT_MAX_TURNS, ge=1)
    result_chars: int = Field(default=DEFAULT_RESULT_CHARS, ge=1)
    keep_results: int = Field(default=DEFAULT_KEEP_RESULTS, ge=0)
    site_ops: StrictBool = False  # appendix C: the paper's agents had no site operations


class BaselineConfig(BaseModel):
    """A committed real-model recording (``baselines/``) replayed offline and checked byte for
    byte against its committed results (:mod:`sgrgym.suite.baseline`)."""

    model_config = _STRICT

    enabled: StrictBool = True
    folder: Path = Path("baselines/qwen2.5-coder-0.5b")


class RunConfig(BaseModel):
    model_config = _STRICT

    seeker: SeekerConfig = SeekerConfig()
    calibration: CalibrationConfig = CalibrationConfig()
    sgr: SgrConfig = SgrConfig()
    llm: LLMConfig | None = None
    baseline: BaselineConfig = BaselineConfig()

    def seeker_agents(self) -> list[str]:
        """The SeekerGym agents run: ``[seeker] agents``, then ``llm`` with an ``[llm]`` table."""
        llm = ["llm"] if self.llm is not None and self.llm.seeker else []
        return [*self.seeker.agents, *llm]

    def sgr_agents(self) -> list[str]:
        """The SGR agents run: ``[sgr] agents``, then ``llm`` with an ``[llm]`` table."""
        llm = ["llm"] if self.llm is not None and self.llm.sgr else []
        return [*self.sgr.agents, *llm]

    def card(self) -> dict[str, object]:
        """Every setting (defaults included) as the run card holds it; the LLM cache's path
        and mode are left out (where a recording lies, and whether it was recorded or
        replayed, is not what was run: a record and its replay have one card)."""
        data = self.model_dump(mode="json")
        if data.get("llm"):
            data["llm"] = {k: v for k, v in data["llm"].items() if k not in ("cache", "mode")}
        return data

    def sha256(self) -> str:
        """The canonical hash of :meth:`card` for the run card."""
        return sha256_json(self.card())


DEFAULT_CONFIG_TOML = f"""\
# sgrgym run: the embedded default (every key optional; see sgrgym/suite/config.py)
[seeker]
agents = ["sentences", "phrases", "belief-phrases", "oracle-text"]
beliefs = ["trajectory", "dedup", "oracle"]
seeds = {DEFAULT_SEEDS}
steps = 10

[calibration]
estimators = ["constant", "abstract-coverage", "visible-count"]
splits = 3
seeds = 10

[sgr]
pack = "demo"
agents = ["oracle", "default", "search-only", "random"]
"""


def parse_config(text: str, where: str) -> RunConfig:
    """A config from TOML text; ``where`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{where}: not valid TOML ({exc})") from None
    except RecursionError:
        raise UserError(f"{where}: TOML nested too deeply to read") from None
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = ".".join(str(part) for part in error["loc"]) or "(top level)"
            problems.append(f"{key}: {error['msg']}")
        raise UserError(f"{where}: {'; '.join(problems[:5])}") from None


def load_config(path: Path | None) -> RunConfig:
    """The run config: ``path`` if given, else the embedded default."""
    if path is None:
        return parse_config(DEFAULT_CONFIG_TOML, "the default config")
    return parse_config(read_text(path, "run config"), str(path))
