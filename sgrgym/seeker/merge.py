"""Joining the finished shards of a ``seeker run`` (``sgrgym merge``) into the folder the
single run writes, byte for byte.

The run's episodes are the (seed, document) pairs of its card in the order the run takes them
(:func:`sgrgym.seeker.run.episode_order`); shard ``I/N`` ran every N-th of them
(:mod:`sgrgym.core.shard`). ``episodes.jsonl`` is the shards' lines in that order
(:meth:`sgrgym.runs.merge.ShardSet.join`); ``summary.json`` is computed from it by the code a
single run ends with (:func:`sgrgym.seeker.run.finish_seeker`), with the θ note the shards
agree on (it says whether θ is the store's pinned one: the same store for every shard of a
run); the LLM call logs are joined (:func:`sgrgym.llm.usage.joined_log`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sgrgym.core.errors import UserError
from sgrgym.core.inputs import field_problem, read_json
from sgrgym.core.io import write_atomic
from sgrgym.llm.usage import LOG, joined_log
from sgrgym.runs.folder import CARD, new_run_folder
from sgrgym.runs.merge import ShardSet
from sgrgym.seeker.records import episode_record
from sgrgym.seeker.run import (
    EPISODES,
    SUMMARY,
    SeekerLLMRunCard,
    SeekerRunCard,
    SeekerSummary,
    episode_order,
    finish_seeker,
)


def is_seeker_card(card: dict[str, Any]) -> bool:
    """Whether ``card`` is the card of a ``seeker run`` folder."""
    return isinstance(card.get("docs"), list) and "corpus" in card and "belief" in card


def _theta_note(shards: ShardSet) -> str:
    notes: dict[str, Path] = {}
    for folder in shards.shards:
        path = folder.path / SUMMARY
        summary = read_json(path, "SeekerGym summary")
        note = summary.get("theta_note") if isinstance(summary, dict) else None
        if not isinstance(note, str):
            raise UserError(f"{path}: not a SeekerGym summary (no theta_note)")
        notes.setdefault(note, folder.path)
    if len(notes) > 1:
        (one, first), (other, second) = list(notes.items())[:2]
        raise UserError(f"{second}: its θ note ({other!r}) differs from {first}'s ({one!r})")
    return next(iter(notes))


def merge_seeker(shards: ShardSet, out: Path) -> SeekerSummary:
    """Write the run of ``shards`` to ``out`` as its single run would; return its summary."""
    model = SeekerLLMRunCard if "llm" in shards.card else SeekerRunCard
    try:
        card = model.model_validate(shards.card)
    except ValidationError as exc:
        path = shards.first.path / CARD
        raise UserError(f"{path}: not a seeker run card: {field_problem(exc)}") from None
    note = _theta_note(shards)
    order = episode_order(card.docs, card.seeds)
    joined = shards.join(EPISODES, lambda r: (r["seed"], r["doc_id"]), order)
    log = joined_log([f.path for f in shards.shards])
    with new_run_folder(out, shards.card_text, finals=(SUMMARY,)) as merged:
        merged.write_final(EPISODES, joined)
        episodes = [
            episode_record(data, f"{out / EPISODES} line {number}")
            for number, data in enumerate(merged.records(EPISODES), start=1)
        ]
        summary = finish_seeker(merged, episodes, card, note)
        if log is not None:
            write_atomic(out / LOG, log)
    return summary
