"""A probe agent the paper does not have: ``search-only``, the shortcut probe.

``search-only`` measures how much of a task set can be answered without any state operation
(the shortcut resistance of SGR-Bench section 3.2.2): it searches with the task's instruction,
opens the top :data:`TOP_HITS` results with ``fetch``, and answers from the one data table among
them that covers the most of the output schema's columns (the better-ranked page on a tie). It
never operates a site, follows no link and reads no PDF.
"""

from __future__ import annotations

from sgrgym.sgr.agents import answer_from
from sgrgym.sgr.env import Page, SgrEnv, TaskObservation

TOP_HITS = 3


def _coverage(page: Page, columns: list[str]) -> tuple[int, str]:
    """(schema columns the page's best table has, that table's name); (0, "") when none."""
    best = (0, "")
    for name, rows in sorted(page.tables().items()):
        covered = sum(column in rows[0] for column in columns) if rows else 0
        if covered > best[0]:
            best = (covered, name)
    return best


class SearchOnlyAgent:
    """Search with the instruction, open the top hits, copy the best-matching table."""

    name = "search-only"

    def __init__(self, hits: int = TOP_HITS) -> None:
        self.hits = hits

    def act(self, env: SgrEnv, obs: TaskObservation) -> str:
        best: tuple[int, Page | None, str] = (0, None, "")
        for hit in env.search(obs.instruction, limit=self.hits):
            opened = env.fetch(hit.url)
            covered, table = _coverage(opened, obs.columns)
            if covered > best[0]:
                best = (covered, opened, table)
        _, chosen, name = best
        return answer_from([chosen], obs, name) if chosen is not None else "NONE"
