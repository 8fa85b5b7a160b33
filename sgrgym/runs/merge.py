"""Joining the finished shard folders of one run (``sgrgym merge``): what every benchmark
shares.

:func:`shard_folders` checks, before anything is written, that the folders are all the shards
of one run, each finished: every folder is a run folder whose card records a shard
(:mod:`sgrgym.core.shard`), holds ``complete.json`` and still has the bytes it lists; the
cards are the same but for ``shard`` (the environment included: another commit or package
version is another run); the shards are ``1/N`` to ``N/N``, each once; ``--out`` is new or
an empty folder outside them. Each folder stays locked while it is read.

:meth:`ShardSet.join` puts the records of one JSONL file back in the order of the single run,
copying each line's bytes: a shard must hold exactly the records of its own episodes, once
each. The benchmark then writes the final results with the code a single run ends with
(``sgrgym.sgr.merge``, ``sgrgym.seeker.merge``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.inputs import BadJson, decode_text, json_value, read_bytes, read_json, shorten
from sgrgym.core.shard import Shard
from sgrgym.runs.folder import CARD, COMPLETE, SHARD, card_differences, card_json, locked


@dataclass(frozen=True)
class ShardFolder:
    """One finished shard folder: its shard and the results its ``complete.json`` lists."""

    path: Path
    shard: Shard
    finals: dict[str, str]  # name -> sha256, as complete.json lists them


@dataclass(frozen=True)
class ShardSet:
    """All the shards of one run, in shard order, and the card of the whole run."""

    card: dict[str, Any]  # the run card without its shard
    card_text: str  # run.json of the whole run: the shards' card without its shard
    shards: list[ShardFolder]

    @property
    def first(self) -> ShardFolder:
        return self.shards[0]

    def join(self, name: str, key: Callable[[Any], Hashable], order: Sequence[Hashable]) -> str:
        """The records of ``name`` of every shard, in the single run's ``order`` of episode
        keys (``key`` of a record); each shard must hold the records of exactly its own
        episodes (:meth:`Shard.select` of ``order``), each once."""
        position = {k: n for n, k in enumerate(order)}
        placed: dict[int, str] = {}
        for folder in self.shards:
            path = folder.path / name
            wanted = set(folder.shard.select(order))
            seen: set[Hashable] = set()
            for number, line, record in record_lines(path, "run record file"):
                try:
                    found = key(record)
                    hash(found)
                except (KeyError, TypeError, IndexError):
                    raise UserError(
                        f"{path} line {number}: not a record of this run ({shorten(line, 80)})"
                    ) from None
                if found not in wanted:
                    raise UserError(
                        f"{path} line {number}: {_shown(found)} is not an episode of shard "
                        f"{folder.shard} of this run"
                    )
                if found in seen:
                    raise UserError(f"{path} line {number}: {_shown(found)} again")
                seen.add(found)
                placed[position[found]] = line
            missing = [k for k in folder.shard.select(order) if k not in seen]
            if missing:
                raise UserError(
                    f"{path}: {_shown(missing[0])} of shard {folder.shard} is missing "
                    f"({len(missing)} record(s) in all)"
                )
        return "".join(placed[n] for n in sorted(placed))


def _shown(key: Hashable) -> str:
    return " ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def record_lines(path: Path, what: str) -> list[tuple[int, str, Any]]:
    """(line number, the line as written with its newline, the record) of a finished JSONL
    file; a missing file has none, a torn last line or a line that is not JSON is an error."""
    if not path.exists():
        return []
    data = read_bytes(path, what)
    if data and not data.endswith(b"\n"):
        raise UserError(f"{path}: the last line has no newline (a torn or altered record)")
    found = []
    text = decode_text(data, path, what)
    for number, line in enumerate(text.split("\n")[:-1], start=1):
        if not line.strip():
            continue
        try:
            found.append((number, line + "\n", json_value(line)))
        except BadJson as exc:
            raise UserError(f"{path} line {number}: {exc} ({shorten(line, 80)})") from None
    return found


def _read_shard(path: Path) -> tuple[ShardFolder, dict[str, Any], str]:
    """The shard folder ``path``, its card without the shard and that card's bytes."""
    if not path.is_dir() or not (path / CARD).is_file():
        raise UserError(f"{path}: not a run folder (no {CARD}); name the shard folders")
    text = decode_text(read_bytes(path / CARD, "run card"), path / CARD, "run card")
    try:
        card = json_value(text)
    except BadJson as exc:
        raise UserError(f"{path / CARD}: {exc}") from None
    if not isinstance(card, dict) or SHARD not in card:
        raise UserError(
            f"{path}: not a shard (its {CARD} records no shard: a run made without --shard)"
        )
    try:
        shard = Shard.of_card(card.pop(SHARD))
    except ValueError:
        raise UserError(f"{path / CARD}: field {SHARD} is not {{index, count}}") from None
    if _shard_card_text(card, shard) != text:
        raise UserError(f"{path / CARD}: not as sgrgym writes a run card (edited?)")
    marker = path / COMPLETE
    if not marker.is_file():
        raise UserError(
            f"{path}: shard {shard} did not finish (no {COMPLETE}); rerun its command to "
            "resume it, then merge"
        )
    listing = read_json(marker, "completion marker")
    files = listing.get("files") if isinstance(listing, dict) else None
    if not isinstance(files, dict):
        raise UserError(f"{marker}: not a completion marker (no files)")
    for name, digest in sorted(files.items()):
        target = path / name
        if not target.is_file() or sha256_file(target)[0] != digest:
            raise UserError(
                f"{path}: {name} is missing or changed since the shard finished (its sha256 "
                f"differs from {COMPLETE}'s)"
            )
    return ShardFolder(path=path, shard=shard, finals=dict(files)), card, card_json(card)


def _shard_card_text(card: dict[str, Any], shard: Shard) -> str:
    """The bytes of the shard's card as :func:`sgrgym.runs.folder.card_text` writes them: the
    run's fields, ``shard``, then ``environment``."""
    fields = {k: v for k, v in card.items() if k != "environment"}
    fields[SHARD] = shard.card()
    if "environment" in card:
        fields["environment"] = card["environment"]
    return card_json(fields)


@contextmanager
def shard_folders(dirs: Sequence[Path], out: Path) -> Iterator[ShardSet]:
    """The shards of one run in ``dirs``, checked and locked while the caller reads them
    (any problem is a UserError naming the folder, found before anything is written)."""
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise UserError(f"{out}: --out already holds something; name a new or empty folder")
    target = out.resolve()
    for path in dirs:
        if target == path.resolve() or path.resolve() in target.parents:
            raise UserError(f"{out}: --out is inside the shard folder {path}; name another")
    seen: dict[Path, Path] = {}
    for path in dirs:
        if seen.setdefault(path.resolve(), path) is not path:
            raise UserError(f"{path}: the same shard folder is given twice")
    with ExitStack() as stack:
        read = []
        for path in dirs:
            if path.is_dir():
                stack.enter_context(locked(path))
            read.append(_read_shard(path))
        first, card, text = read[0]
        by_index: dict[int, ShardFolder] = {}
        for folder, other, _ in read:
            if folder.shard.count != first.shard.count:
                raise UserError(
                    f"{folder.path}: shard {folder.shard} of a split in {folder.shard.count}, "
                    f"but {first.path} is shard {first.shard} (a split in {first.shard.count})"
                )
            if other != card:
                raise UserError(
                    f"{folder.path}: a shard of another run ({CARD} differs from "
                    f"{first.path}'s in: {card_differences(other, card)})"
                )
            if folder.shard.index in by_index:
                raise UserError(
                    f"{folder.path}: shard {folder.shard} is given twice (also "
                    f"{by_index[folder.shard.index].path})"
                )
            by_index[folder.shard.index] = folder
        count = first.shard.count
        missing = [str(Shard(i, count)) for i in range(1, count + 1) if i not in by_index]
        if missing:
            raise UserError(
                f"{first.path}: shard(s) {', '.join(missing[:5])} of its run not given; name "
                f"all {count} shard folders"
            )
        yield ShardSet(card=card, card_text=text, shards=[by_index[i] for i in sorted(by_index)])
