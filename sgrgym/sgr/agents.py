"""Non-LLM agents for SGR episodes: an oracle, a default-state baseline, a random walker and
an explorer.

- ``oracle`` follows the task's reference state path and answers from the archived pages it
  reaches (the pages' data tables, projected onto the output schema). It validates the
  tasks, the site models and the packs: it must score 1 / 1 / 1 on every task.
- ``default`` searches the pack with the instruction, opens the best hit's site at its start
  page and answers from what that default state shows: what an agent that never sets the
  site's state would get.
- ``random`` does the same, then follows ``steps`` random links of the site (seeded per task).
- ``explore`` searches, opens the first hit's site (the first that has controls) and applies
  ``steps`` random operations to random controls of its pages (seeded per task): values from
  the control's value set or from the page's own links, random windows, sorts and pages, and
  now and then another view. It submits the rows of every page it reaches as an interim
  answer and answers with the last one: wrong but plausible rows from states the pack mostly
  does not archive, a test of rendering and of the diagnostics.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Protocol
from urllib.parse import urlsplit

from sgrgym.sgr.env import Page, SgrEnv, TaskObservation
from sgrgym.sgr.sites.model import Control, Op, OpName, SiteError, SiteModel, State
from sgrgym.sgr.sites.reference import Reference, rows_as_answer
from sgrgym.snapshot.reading import page_targets


class Agent(Protocol):
    name: str

    def act(self, env: SgrEnv, obs: TaskObservation) -> str:
        """Use the env's tools and return the raw answer text."""


def answer_from(pages: Sequence[Page], obs: TaskObservation, table: str | None = None) -> str:
    """Rows of ``table`` (default: the first table holding a schema column) on ``pages``."""
    if table is None:
        for page in pages:
            for name, rows in page.tables().items():
                if rows and any(col in rows[0] for col in obs.columns):
                    table = name
                    break
            if table:
                break
    if table is None:
        return "NONE"
    return rows_as_answer(
        [p.body for p in pages if "html" in p.content_type],
        table,
        obs.columns,
        obs.field_separator,
        obs.record_separator,
    )


class OracleAgent:
    name = "oracle"

    def __init__(self, references: dict[str, Reference]) -> None:
        self.references = references

    def act(self, env: SgrEnv, obs: TaskObservation) -> str:
        reference = self.references[obs.task_id]
        model = env.sites[reference.site]
        pages = [env.fetch(model.url(model.default_state()))]
        for op in reference.path:
            pages.append(env.operate(reference.site, op))
        chosen = [pages[i] for i in reference.answer.states]
        return answer_from(chosen, obs, reference.answer.table)


def _start(env: SgrEnv, obs: TaskObservation) -> Page | None:
    hits = env.search(obs.instruction)
    home = env.home(hits[0].url) if hits else None
    return env.fetch(home) if home else None


class DefaultStateAgent:
    name = "default"

    def act(self, env: SgrEnv, obs: TaskObservation) -> str:
        page = _start(env, obs)
        return answer_from([page], obs) if page else "NONE"


def same_site_links(page: Page) -> list[str]:
    """The distinct links of an HTML page that stay on its host, in page order, then the
    addresses its forms' choices lead to."""
    if "html" not in page.content_type:
        return []
    host = urlsplit(page.url).netloc
    links = page_targets(page.body, page.content_type, page.url)
    return [u for u in links if urlsplit(u).netloc == host]


def task_rng(seed: int, task_id: str) -> random.Random:
    """A random generator seeded by the run's seed and the task (order-independent)."""
    digest = hashlib.sha256(f"{seed}:{task_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class RandomAgent:
    name = "random"

    def __init__(self, seed: int = 0, steps: int = 4) -> None:
        self.seed = seed
        self.steps = steps

    def act(self, env: SgrEnv, obs: TaskObservation) -> str:
        rng = task_rng(self.seed, obs.task_id)
        page = _start(env, obs)
        if page is None:
            return "NONE"
        for _ in range(self.steps):
            links = same_site_links(page)
            if not links:
                break
            page = env.fetch(rng.choice(links))
        return answer_from([page], obs)


OP_OF_KIND: dict[str, OpName] = {
    "filter": "set_filter",
    "view": "select_view",
    "hierarchy": "open_node",
    "scope": "set_scope",
    "window": "set_window",
    "sort": "sort",
    "page": "page",
}
ROUND_BOUNDS = ("", "100000", "250000", "500000", "1000000", "1900", "1930", "1950", "2000")


def _link_values(model: SiteModel, page: Page, param: str) -> list[str]:
    """The values of ``param`` that the page's own links lead to."""
    values = []
    for url in same_site_links(page):
        try:
            value = model.parse_url(url).get(param)
        except SiteError:
            continue
        if value:
            values.append(value)
    return sorted(set(values))


def random_op(model: SiteModel, state: State, page: Page, rng: random.Random) -> Op:
    """A random operation on a random control of ``state``'s page (or another view)."""
    controls = model.route_controls(state.path)
    if not controls or rng.random() < 0.15:
        return Op(op="select_view", value=rng.choice(model.routes).path)
    control: Control = rng.choice(controls)
    first = control.params[0]
    if control.kind in ("filter", "scope") and state.get(first) and rng.random() < 0.2:
        return Op(op="clear_filter", control=control.name)
    if control.kind == "sort":
        keys = control.values or tuple(_link_values(model, page, first)) or ("",)
        return Op(
            op="sort", control=control.name, value=rng.choice(keys), end=rng.choice(("asc", "desc"))
        )
    if control.kind == "window":
        starts = _link_values(model, page, first) or list(ROUND_BOUNDS)
        ends = _link_values(model, page, control.params[1]) or [""]
        return Op(
            op="set_window",
            control=control.name,
            value=rng.choice(starts),
            end=rng.choice(["", *ends]),
        )
    if control.kind == "page":
        return Op(op="page", control=control.name, value=str(rng.randint(1, 3)))
    values = list(control.values) or _link_values(model, page, first)
    if not values:
        return Op(op="select_view", value=rng.choice(model.routes).path)
    return Op(op=OP_OF_KIND[control.kind], control=control.name, value=rng.choice(values))


class ExploreAgent:
    name = "explore"

    def __init__(self, seed: int = 0, steps: int = 8) -> None:
        self.seed = seed
        self.steps = steps

    def act(self, env: SgrEnv, obs: TaskObservation) -> str:
        rng = task_rng(self.seed, obs.task_id)
        models = [env.sim.site_of_url(hit.url) for hit in env.search(obs.instruction)]
        model = next((m for m in models if m is not None and m.controls), None)
        if model is None:
            return "NONE"
        page = env.fetch(model.url(model.default_state()))
        state, shown = model.default_state(), page
        for _ in range(self.steps):
            page = env.operate(model.name, random_op(model, state, shown, rng))
            if page.status == 200:
                state, shown = model.parse_url(page.url), page
                env.submit_answer(answer_from([page], obs))
        return answer_from([shown], obs)


AGENTS = ("oracle", "default", "random", "explore")
