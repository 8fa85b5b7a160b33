"""Non-LLM agents for SGR episodes: an oracle, a default-state baseline and a random walker.

- ``oracle`` follows the task's reference state path and answers from the archived pages it
  reaches (the pages' data tables, projected onto the output schema). It validates the
  tasks, the site models and the packs: it must score 1 / 1 / 1 on every task.
- ``default`` searches the pack with the instruction, opens the best hit's site at its start
  page and answers from what that default state shows: what an agent that never sets the
  site's state would get.
- ``random`` does the same, then follows ``steps`` random links of the site (seeded per task).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from html.parser import HTMLParser
from typing import Protocol
from urllib.parse import urljoin, urlsplit

from sgrgym.sgr.env import Observation, Page, SgrEnv
from sgrgym.sgr.sites.reference import Reference, rows_as_answer


class Agent(Protocol):
    name: str

    def act(self, env: SgrEnv, obs: Observation) -> str:
        """Use the env's tools and return the raw answer text."""


def answer_from(pages: Sequence[Page], obs: Observation, table: str | None = None) -> str:
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
        [p.body for p in pages if "html" in p.content_type], table, obs.columns,
        obs.field_separator, obs.record_separator,
    )  # fmt: skip


class OracleAgent:
    name = "oracle"

    def __init__(self, references: dict[str, Reference]) -> None:
        self.references = references

    def act(self, env: SgrEnv, obs: Observation) -> str:
        reference = self.references[obs.task_id]
        model = env.sites[reference.site]
        pages = [env.fetch(model.url(model.default_state()))]
        for op in reference.path:
            pages.append(env.operate(reference.site, op))
        chosen = [pages[i] for i in reference.answer.states]
        return answer_from(chosen, obs, reference.answer.table)


def _start(env: SgrEnv, obs: Observation) -> Page | None:
    hits = env.search(obs.instruction)
    home = env.home(hits[0].url) if hits else None
    return env.fetch(home) if home else None


class DefaultStateAgent:
    name = "default"

    def act(self, env: SgrEnv, obs: Observation) -> str:
        page = _start(env, obs)
        return answer_from([page], obs) if page else "NONE"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def same_site_links(page: Page) -> list[str]:
    """The distinct links of an HTML page that stay on its host, in page order."""
    if "html" not in page.content_type:
        return []
    parser = _Links()
    parser.feed(page.body.decode("utf-8", "replace"))
    host = urlsplit(page.url).netloc
    links = [urljoin(page.url, h) for h in parser.hrefs]
    return list(dict.fromkeys(u for u in links if urlsplit(u).netloc == host))


class RandomAgent:
    name = "random"

    def __init__(self, seed: int = 0, steps: int = 4) -> None:
        self.seed = seed
        self.steps = steps

    def act(self, env: SgrEnv, obs: Observation) -> str:
        digest = hashlib.sha256(f"{self.seed}:{obs.task_id}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        page = _start(env, obs)
        if page is None:
            return "NONE"
        for _ in range(self.steps):
            links = same_site_links(page)
            if not links:
                break
            page = env.fetch(rng.choice(links))
        return answer_from([page], obs)


AGENTS = ("oracle", "default", "random")
