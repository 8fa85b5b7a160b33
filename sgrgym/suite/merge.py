"""``sgrgym merge``: join the finished shard folders of one run into the folder its single run
writes.

The shards are checked together (:func:`sgrgym.runs.merge.shard_folders`), then joined by the
benchmark whose run they are (:func:`sgrgym.sgr.merge.merge_sgr`,
:func:`sgrgym.seeker.merge.merge_seeker`), and the joined folder is verified as ``sgrgym
verify-run`` verifies it (:func:`sgrgym.suite.verify.verify_folder`). Any refusal or failure
leaves nothing at ``--out``.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sgrgym.core.errors import UserError
from sgrgym.runs.folder import CARD
from sgrgym.runs.merge import shard_folders
from sgrgym.suite.verify import folder_kind, verify_folder


@dataclass(frozen=True)
class Merged:
    kind: str  # "sgr" or "seeker"
    shards: int
    episodes: int
    headline: str  # the run's main metric, in words


def merge_runs(dirs: Sequence[Path], out: Path) -> Merged:
    """Join the shard folders ``dirs`` of one ``sgr run`` or ``seeker run`` into ``out``."""
    with shard_folders(dirs, out) as shards:
        kind = folder_kind(shards.card)
        if kind == "sgr":
            from sgrgym.sgr.merge import merge_sgr

            report = merge_sgr(shards, out)
            overall = report.overall
            headline = f"Item-F1 {overall.item_f1:.3f}" if overall.item_f1 is not None else ""
            merged = Merged(kind, len(shards.shards), overall.n, headline)
        elif kind == "seeker":
            from sgrgym.seeker.merge import merge_seeker

            summary = merge_seeker(shards, out)
            headline = f"final completeness {summary.final_completeness:.3f}"
            merged = Merged(kind, len(shards.shards), summary.episodes, headline)
        else:
            raise UserError(
                f"{shards.first.path}: its {CARD} is neither an sgr run's nor a seeker run's "
                "(only their shards can be merged)"
            )
    problems = verify_folder(out, kind)
    if problems:
        shutil.rmtree(out)
        raise UserError(f"{out}: the joined run does not verify ({problems[0]}); nothing is kept")
    return merged
