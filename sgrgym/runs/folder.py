"""A run folder: the one place that makes a command's ``--out`` safe to interrupt and resume.

- **Run card** (``run.json``): the command's card plus ``environment``
  (:mod:`sgrgym.runs.environment`: sgrgym version and git commit, Python, every installed
  package's version); written when the folder is first used and compared on every later use;
  a folder holding another run's card (or files but no card) is refused, with the fields that
  differ. A shard of a run (``--shard I/N``, :mod:`sgrgym.core.shard`) adds ``shard``
  (``{"index": I, "count": N}``) before ``environment``; an unsharded card has no such field,
  so its bytes do not depend on sharding existing, and the card of the whole run is a shard's
  card without it (:func:`sgrgym.runs.merge.shard_folders`).
- **Lock**: an exclusive ``flock`` on ``.lock`` for as long as the folder is open; a second
  process on the same folder is refused instead of interleaving its records.
- **Append-only records** (JSONL): a last line without its newline is a torn write (the process
  was killed mid-line); it is cut off when the folder is opened again, so it never merges with
  the next record. Lines are written whole, one ``write`` each.
- **Completion marker** (``complete.json``): written after the final results, listing them with
  their sha256. The first change to an opened folder (or :meth:`RunFolder.begin`, called once
  the command has decided to run) removes the marker and the final results first, so a killed
  rerun never leaves an old summary beside new partial records, and a command that refuses
  after opening the folder deletes nothing.
"""

from __future__ import annotations

import fcntl
import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ValidationError

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import canonical_json, sha256_file
from sgrgym.core.inputs import BadJson, decode_text, field_problem, json_value, read_bytes, shorten
from sgrgym.core.io import TMP_SUFFIX, jsonl_line, write_atomic
from sgrgym.core.shard import Shard
from sgrgym.runs.environment import run_environment

CARD = "run.json"
LOCK = ".lock"
COMPLETE = "complete.json"
SHARD = "shard"  # the run card's field of a shard (absent from an unsharded run's card)
_OWN = {CARD, LOCK, COMPLETE}


def read_log(
    path: Path,
    what: str,
    repair: bool = True,
    check: Callable[[int, Any], object] | None = None,
) -> list[tuple[int, Any]]:
    """(line number, record) of an append-only JSONL file; a torn last line is cut off
    (``repair``) or is an error (``repair=False``: reading a finished run, never changing it).

    A missing file is an empty log. Any other bad line is an error naming the file and line,
    and so is a record ``check`` refuses; both are found before anything is cut, so a file that
    is not such a log is never changed. With ``check`` (a file the user names, such as a cache),
    a file with no complete line at all is refused rather than emptied.
    """
    if not path.exists() and not path.is_symlink():
        return []
    data = read_bytes(path, what)
    end = data.rfind(b"\n") + 1
    if end != len(data) and not repair:
        raise UserError(f"{path}: the last line has no newline (a torn or altered record)")
    records = []
    for number, line in enumerate(decode_text(data[:end], path, what).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json_value(line)))
        except BadJson as exc:
            raise UserError(f"{path} line {number}: {exc} ({shorten(line, 80)})") from None
        if check is not None:
            check(number, records[-1][1])
    if end != len(data):
        if check is not None and not records:
            raise UserError(
                f"{path}: not a {what} (no complete line: its only line has no newline); "
                "name a new file or one this command wrote"
            )
        with path.open("r+b") as f:
            f.truncate(end)
    return records


Record = TypeVar("Record", bound=BaseModel)


def typed_record(model: type[Record], data: object, where: str, what: str) -> Record:
    """``data`` as a ``model`` record; a bad one is an error naming ``where`` and the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{where}: a {what} record: {field_problem(exc, '(record)')}") from None


def read_records(path: Path, model: type[Record], what: str) -> list[Record]:
    """The typed records of a finished run's JSONL file (a missing file: none)."""
    return [
        typed_record(model, data, f"{path} line {number}", what)
        for number, data in read_log(path, what, repair=False)
    ]


def card_differences(found: Any, wanted: Any) -> str:
    """The fields in which two run cards differ (``key`` or ``key[inner key]``), at most 10."""
    if not isinstance(found, dict) or not isinstance(wanted, dict):
        return "the card is not this command's"
    parts = []
    for key in sorted(k for k in set(found) | set(wanted) if found.get(k) != wanted.get(k)):
        old, new = found.get(key), wanted.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            inner = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            parts += [f"{key}[{shorten(str(k), 400)}]" for k in inner]
        else:
            parts.append(key)
    return ", ".join(parts[:10]) if parts else "formatting"


class RunFolder:
    """An opened, locked run folder (use :func:`open_run_folder`)."""

    def __init__(self, path: Path, finals: Sequence[str] = ()) -> None:
        self.path = path
        self._finals = tuple(finals)
        self._begun = False

    @property
    def begun(self) -> bool:
        """Whether the run changed anything in the folder (a record, a final result)."""
        return self._begun

    def begin(self) -> None:
        """The command runs: remove the completion marker and the final results (once)."""
        if self._begun:
            return
        self._begun = True
        for name in (COMPLETE, *self._finals):
            _remove(self.path / name)

    def records(self, name: str) -> list[Any]:
        """The complete records of ``name`` (torn last line cut off)."""
        return [record for _, record in read_log(self.path / name, "run record file")]

    def keep(self, name: str, wanted: Callable[[Any], bool]) -> list[Any]:
        """Keep only the records of ``name`` for which ``wanted`` holds (rewritten atomically)."""
        path = self.path / name
        records = self.records(name)
        kept = [r for r in records if wanted(r)]
        if len(kept) != len(records):
            self.begin()
            write_atomic(path, "".join(jsonl_line(r) for r in kept).encode("utf-8"))
        return kept

    def append(self, name: str, record: object) -> None:
        """Append one record as a whole line (one write, flushed)."""
        self.begin()
        with (self.path / name).open("a", encoding="utf-8") as f:
            f.write(jsonl_line(record))

    def write_final(self, name: str, text: str) -> None:
        """Write a final result (atomically); list it in :meth:`complete`."""
        self.begin()
        write_atomic(self.path / name, text.encode("utf-8"))

    def complete(self, names: Sequence[str] | None = None) -> None:
        """Mark the run complete: ``complete.json`` lists the results ``names`` (default: every
        file in the folder but the card) with their sha256."""
        self.begin()
        if names is None:
            names = [
                str(p.relative_to(self.path))
                for p in self.path.rglob("*")
                if p.is_file() and p.name not in _OWN and not p.name.endswith(TMP_SUFFIX)
            ]
        files = {n: sha256_file(self.path / n)[0] for n in sorted(names)}
        write_atomic(self.path / COMPLETE, canonical_json({"files": files}).encode("utf-8"))


def _flock(handle: IO[bytes], busy: str) -> IO[bytes]:
    """``handle`` with an exclusive lock on its file, else closed and the UserError ``busy``."""
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise UserError(busy) from None
    return handle


def _lock(path: Path) -> IO[bytes]:
    return _flock(
        (path / LOCK).open("a+b"),
        f"{path}: another sgrgym process is writing to this folder; wait for it to finish or "
        "use another --out",
    )


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock of the existing run folder ``path`` (to read it while no run writes it;
    a folder without a lock file is read as it is, and gets none)."""
    if not (path / LOCK).is_file():
        yield
        return
    handle = _flock(
        (path / LOCK).open("rb"),
        f"{path}: an sgrgym process is writing to this folder; wait for it to finish",
    )
    try:
        yield
    finally:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


def card_json(fields: dict[str, Any]) -> str:
    """``run.json``'s bytes for the card ``fields`` (as read back from a card, or built)."""
    return json.dumps(fields, indent=2, ensure_ascii=False) + "\n"


def card_text(card: BaseModel, shard: Shard | None = None) -> str:
    """The bytes of ``run.json`` for ``card``: its fields, the ``shard`` if one is given, then
    ``environment``."""
    fields = json.loads(card.model_dump_json())
    if shard is not None:
        fields[SHARD] = shard.card()
    fields["environment"] = run_environment().model_dump(mode="json")
    return card_json(fields)


def _check_card(path: Path, text: str) -> None:
    card_path = path / CARD
    if not card_path.exists():
        # A card whose write was cut short (a kill, a full disk) is not another run's file.
        (path / (CARD + TMP_SUFFIX)).unlink(missing_ok=True)
        others = sorted(p.name for p in path.iterdir() if p.name not in _OWN)
        if others:
            raise UserError(
                f"{path}: holds files but no run card {CARD} ({', '.join(others[:5])}); "
                "use a new or empty --out folder"
            )
        write_atomic(card_path, text.encode("utf-8"))
        return
    found_text = decode_text(read_bytes(card_path, "run card"), card_path, "run card")
    if found_text == text:
        return
    try:
        found = json_value(found_text)
    except BadJson:
        found = None
    raise UserError(
        f"{path}: holds another run ({card_path} differs in: "
        f"{card_differences(found, json.loads(text))}); use a new --out folder"
    )


@contextmanager
def open_run_folder(
    path: Path, card: BaseModel, finals: Sequence[str], *, shard: Shard | None = None
) -> Iterator[RunFolder]:
    """Create or reopen the run folder ``path`` for the run ``card`` (of the ``shard`` of the
    run, if one is given), locked while open.

    ``finals`` are the final results (files or folders) of the run: they and the completion
    marker are removed before the caller changes anything (:meth:`RunFolder.begin`), and
    rewritten by the caller.

    A run that this call starts in a new (or empty) folder and that fails before it records
    anything (a model server that is not there, a wrong name found late) leaves no folder
    behind, so the corrected command is not refused as "another run".
    """
    with _open(path, card_text(card, shard), finals) as folder:
        yield folder


@contextmanager
def new_run_folder(path: Path, text: str, finals: Sequence[str]) -> Iterator[RunFolder]:
    """A new run folder ``path`` with the card ``text`` as it is (a run joined from its
    shards), locked while open. An existing ``path`` must be an empty folder; if anything
    fails before the caller is done, nothing is left at ``path``."""
    if path.is_symlink() or (path.exists() and (not path.is_dir() or any(path.iterdir()))):
        raise UserError(f"{path}: --out already holds something; name a new or empty folder")
    try:
        with _open(path, text, finals) as folder:
            yield folder
    except BaseException:
        _remove(path)
        raise


@contextmanager
def _open(path: Path, text: str, finals: Sequence[str]) -> Iterator[RunFolder]:
    if path.exists() and not path.is_dir():
        raise UserError(f"{path}: --out names an existing file; name a folder")
    new = not path.exists() or not any(path.iterdir())
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{path}: cannot create the --out folder ({exc.strerror})") from None
    handle = _lock(path)
    folder: RunFolder | None = None
    failed = False
    try:
        _check_card(path, text)
        folder = RunFolder(path, finals)
        yield folder
    except BaseException:
        failed = True
        raise
    finally:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()
        if failed and new and (folder is None or not folder.begun):
            _remove(path)


def _remove(target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
