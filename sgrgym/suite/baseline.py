"""A committed model baseline: a recorded chat cache and the results it gives, replayed offline.

A baseline folder (e.g. ``baselines/qwen2.5-coder-0.5b/``) holds

- ``manifest.json``: the model (name, GGUF sha256), the server build, the command that served
  it, the recorded cache (xz-compressed SQLite: its sha256 and that of the unpacked file), the
  runs (each an ``sgrgym`` argument list with ``{cache}`` and ``{out}`` placeholders and the
  result files it writes), what was measured while recording, and the sha256 of every other
  file in the folder;
- the cache file and one folder per run with the result files the recording wrote.

:func:`replay` checks every pin, unpacks the cache into a scratch folder, runs each command
with ``--llm-mode replay`` (offline: a request missing from the cache is an error, no
connection is attempted) and compares the result files byte for byte with the committed ones.
:func:`compare_file` names each difference: the file, the record (a JSONL record by its
identity, ``doc_id=... seed=...`` for a SeekerGym episode, ``task_id=...`` for an SGR answer or
trajectory), the field as a path (``llm.calls[2].prompt_tokens``) and both values;
:func:`difference_lines` makes readable lines of them, and :class:`ReplayStatus` is the outcome
as ``sgrgym run`` records it (``OUT/baseline/replay.json``).
Task and corpus paths in the commands are relative to the repository root, as the run cards
record them, so a replay runs from there.
"""

from __future__ import annotations

import json
import lzma
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sgrgym.core.errors import PinError, UserError
from sgrgym.core.hashing import canonical_json, sha256_file
from sgrgym.core.inputs import field_problem
from sgrgym.core.output import Say

MANIFEST = "manifest.json"
FORMAT = "sgrgym-llm-baseline"
_SHA256 = r"^[0-9a-f]{64}$"
_CHUNK = 1 << 20
MAX_LISTED = 20  # differences listed per result file; the rest are counted
VALUE_CHARS = 100  # each value of a difference, as compact JSON, is cut to this length
JSONL_IDENTITY = (("doc_id", "seed"), ("task_id",))  # SeekerGym episodes; SGR answers, trajectories
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
WHOLE_FILE = "(file)"  # the record of a .json file's difference (the file is one record)

RunCommand = Callable[[list[str]], None]  # runs ``sgrgym ARGV``; a failure is a UserError
ModelT = TypeVar("ModelT", bound=BaseModel)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelPin(_Frozen):
    name: str  # `sgrgym llm models`
    gguf: str
    gguf_sha256: str = Field(pattern=_SHA256)


class ServerPin(_Frozen):
    build: str  # the key in sgrgym/llm/data/local_models.json
    package: str
    serve: str  # the command that served the model while recording


class CachePin(_Frozen):
    file: str  # xz-compressed requests-cache SQLite, in the folder
    sqlite_sha256: str = Field(pattern=_SHA256)  # of the unpacked file


class RunSpec(_Frozen):
    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")  # its result folder in the baseline
    argv: list[str] = Field(min_length=1)  # `sgrgym` arguments; {cache} and {out} filled in
    results: list[str] = Field(min_length=1)  # the files compared after a replay


class BaselineManifest(_Frozen):
    format: str = Field(pattern=f"^{FORMAT}$")
    version: int = 1
    model: ModelPin
    server: ServerPin
    cache: CachePin
    runs: list[RunSpec] = Field(min_length=1)
    measured: dict[str, Any] = {}  # numbers taken while recording (wall time etc.), not checked
    files: dict[str, str] = {}  # path in the folder -> sha256, every file but the manifest


class Difference(_Frozen):
    """One difference between a committed result file and its replay."""

    file: str  # <run>/<file>
    record: str  # doc_id=... seed=..., task_id=... or line N (JSONL); (file) for a .json file
    # Where in the record: a path (query_diversity[3], llm.calls[2].prompt_tokens), or
    # (record) for a JSONL record added or missing, (file) for a file, (bytes) for bytes that
    # differ where the parsed values do not (formatting, order)
    field: str
    committed: str | None  # compact JSON cut to VALUE_CHARS; None: absent
    replayed: str | None


class FileDifferences(_Frozen):
    """The differences of one result file: the first :data:`MAX_LISTED`, and how many more."""

    file: str
    listed: tuple[Difference, ...]
    unlisted: int = 0


@dataclass(frozen=True)
class RunReplay:
    name: str
    out: Path
    differences: tuple[FileDifferences, ...] = ()  # what differs in each result file that does

    @property
    def differing(self) -> tuple[str, ...]:
        """The result files whose bytes differ from the committed ones."""
        return tuple(d.file.removeprefix(f"{self.name}/") for d in self.differences)


class ReplayStatus(_Frozen):
    """The outcome of a replay as ``sgrgym run`` records it in ``OUT/baseline/replay.json``."""

    baseline: str  # the baseline folder
    runs: list[str]  # its runs
    identical: bool
    differences: list[Difference] = []  # the listed differences, file by file
    unlisted: dict[str, int] = {}  # file -> differences beyond the listed ones
    error: str | None = None  # the replay failed outright (e.g. a request not in the cache)

    def lines(self, limit: int | None = None) -> list[str]:
        """What differs (or the error), one line each; at most ``limit`` difference lines."""
        if self.error is not None:
            return [f"the replay failed: {self.error}"]
        return difference_lines(self.differences, self.unlisted, limit)


def _read_model(path: Path, model: type[ModelT], what: str) -> ModelT:
    """``path`` read as ``model``; an unreadable file or a bad field is an error naming it."""
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read the {what} ({exc.strerror})") from None
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        raise UserError(f"{path}: {field_problem(exc)}") from None


def load(folder: Path) -> BaselineManifest:
    return _read_model(folder / MANIFEST, BaselineManifest, "baseline manifest")


def folder_files(folder: Path) -> list[str]:
    """Every file under ``folder`` but the manifest, as sorted relative POSIX paths."""
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).as_posix() != MANIFEST
    )


def pin_files(folder: Path) -> BaselineManifest:
    """Rewrite the manifest's ``files`` with the sha256 of every file now in ``folder``."""
    manifest = load(folder)
    files = {name: sha256_file(folder / name)[0] for name in folder_files(folder)}
    pinned = manifest.model_copy(update={"files": files})
    (folder / MANIFEST).write_text(canonical_json(pinned.model_dump()), "utf-8")
    return pinned


def verify(folder: Path) -> BaselineManifest:
    """The manifest, after checking that the folder holds exactly the pinned files, unchanged."""
    manifest = load(folder)
    present = set(folder_files(folder))
    missing = sorted(set(manifest.files) - present)
    if missing:
        raise PinError(f"{folder}: pinned file(s) missing: {', '.join(missing)}")
    extra = sorted(present - set(manifest.files))
    if extra:
        raise PinError(
            f"{folder}: file(s) not pinned in {MANIFEST}: {', '.join(extra)} "
            "(remove them, or re-pin with sgrgym.suite.baseline.pin_files)"
        )
    for name, expected in manifest.files.items():
        actual = sha256_file(folder / name)[0]
        if actual != expected:
            raise PinError(
                f"{folder / name}: sha256 {actual} differs from {expected} pinned in {MANIFEST}"
            )
    if manifest.cache.file not in manifest.files:
        raise PinError(f"{folder / MANIFEST}: cache.file {manifest.cache.file!r} is not pinned")
    for run in manifest.runs:
        for result in run.results:
            if f"{run.name}/{result}" not in manifest.files:
                raise PinError(
                    f"{folder / MANIFEST}: run {run.name!r} result {result!r} is not pinned"
                )
    return manifest


def pack_cache(sqlite: Path, folder: Path, name: str = "calls.sqlite.xz") -> CachePin:
    """Copy a recorded cache into ``folder``: VACUUMed (no free pages), then xz-compressed."""
    with tempfile.TemporaryDirectory(prefix="sgrgym-baseline-") as scratch:
        copy = Path(scratch) / "calls.sqlite"
        source, connection = sqlite3.connect(sqlite), sqlite3.connect(copy)
        try:
            source.backup(connection)  # a consistent copy even while a writer is busy
            connection.execute("VACUUM")
        finally:
            source.close()
            connection.close()
        with open(copy, "rb") as src, lzma.open(folder / name, "wb", preset=9) as out:
            shutil.copyfileobj(src, out, _CHUNK)
        return CachePin(file=name, sqlite_sha256=sha256_file(copy)[0])


def unpack_cache(folder: Path, manifest: BaselineManifest, dest: Path) -> Path:
    """The recorded cache decompressed to ``dest`` and checked against its pin."""
    target = dest / "calls.sqlite"
    with lzma.open(folder / manifest.cache.file, "rb") as src, open(target, "wb") as out:
        shutil.copyfileobj(src, out, _CHUNK)
    actual = sha256_file(target)[0]
    if actual != manifest.cache.sqlite_sha256:
        raise PinError(
            f"{folder / manifest.cache.file}: unpacked sha256 {actual} differs from "
            f"cache.sqlite_sha256 {manifest.cache.sqlite_sha256} in {MANIFEST}"
        )
    return target


def command(run: RunSpec, cache: Path, out: Path, mode: str) -> list[str]:
    """The run's ``sgrgym`` arguments with the cache and output filled in, in ``mode``."""
    fill = {"{cache}": str(cache), "{out}": str(out)}
    return [fill.get(arg, arg) for arg in run.argv] + ["--llm-mode", mode, "--quiet"]


def _quiet(_: str) -> None:
    return None


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


Found = tuple[str, str | None, str | None]  # (field path, committed, replayed)
Placed = tuple[str, str, str | None, str | None]  # (record, field path, committed, replayed)


def _compact(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _same_value(a: object, b: object) -> bool:
    """Equal as JSON, types included (``1`` is not ``1.0`` nor ``true``; NaN equals NaN)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _key_path(path: str, key: str) -> str:
    """``path.key``, or ``path["key"]`` for a key that is not a plain name."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _walk(committed: object, replayed: object, path: str, found: list[Found]) -> None:
    """Append (field path, committed, replayed) for every leaf where the values differ."""
    if isinstance(committed, dict) and isinstance(replayed, dict):
        for key in [*committed, *(k for k in replayed if k not in committed)]:
            where = _key_path(path, str(key))
            if key not in replayed:
                found.append((where, _compact(committed[key]), None))
            elif key not in committed:
                found.append((where, None, _compact(replayed[key])))
            else:
                _walk(committed[key], replayed[key], where, found)
    elif isinstance(committed, list) and isinstance(replayed, list):
        for i in range(max(len(committed), len(replayed))):
            where = f"{path}[{i}]"
            if i >= len(replayed):
                found.append((where, _compact(committed[i]), None))
            elif i >= len(committed):
                found.append((where, None, _compact(replayed[i])))
            else:
                _walk(committed[i], replayed[i], where, found)
    elif not _same_value(committed, replayed):
        found.append((path or "(record)", _compact(committed), _compact(replayed)))


def _parse(text: str) -> tuple[bool, object]:
    """(True, the JSON value), or (False, the text) when it is not JSON."""
    try:
        return True, json.loads(text)
    except ValueError:
        return False, text


def _identity(record: object) -> str | None:
    """``doc_id=... seed=...`` or ``task_id=...`` (:data:`JSONL_IDENTITY`), else None."""
    if isinstance(record, dict):
        for fields in JSONL_IDENTITY:
            if all(f in record for f in fields):
                return " ".join(
                    f"{f}={v if isinstance(v, str) else json.dumps(v)}"
                    for f, v in ((f, record[f]) for f in fields)
                )
    return None


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _keyed(*texts: str) -> list[list[tuple[str, object]]]:
    """Each JSONL text's records, keyed by their identity, or all by ``line N`` when the
    identities do not name every record of every text exactly once."""
    values = [[_parse(line)[1] for line in _lines(text)] for text in texts]
    keys = [[_identity(v) for v in vs] for vs in values]
    if all(None not in ks and len(set(ks)) == len(ks) for ks in keys):
        return [
            [(str(k), v) for k, v in zip(ks, vs, strict=True)]
            for ks, vs in zip(keys, values, strict=True)
        ]
    return [[(f"line {n}", v) for n, v in enumerate(vs, start=1)] for vs in values]


def _jsonl_differences(committed: str, replayed: str) -> list[Placed]:
    """(record, field, committed, replayed) of every difference of two JSONL texts."""
    ours, theirs = _keyed(committed, replayed)
    by_key = dict(theirs)
    found: list[Placed] = []
    for key, value in ours:
        if key not in by_key:
            found.append((key, "(record)", _compact(value), None))
            continue
        fields: list[Found] = []
        _walk(value, by_key[key], "", fields)
        found += [(key, *f) for f in fields]
    known = {key for key, _ in ours}
    found += [(key, "(record)", None, _compact(v)) for key, v in theirs if key not in known]
    return found


def _json_differences(name: str, committed: str, replayed: str) -> list[Placed] | None:
    """(record, field, committed, replayed) of every difference of two JSON texts; None when
    they are equal by the rule for ``name``, an empty list when one is not JSON."""
    (ok_a, a), (ok_b, b) = _parse(committed), _parse(replayed)
    if not (ok_a and ok_b):
        return []
    if name == "run.json" and isinstance(a, dict) and isinstance(b, dict):
        a = {k: v for k, v in a.items() if k != "environment"}
        b = {k: v for k, v in b.items() if k != "environment"}
        if _same_value(a, b):
            return None  # a run card is compared by its values, without its environment
    fields: list[Found] = []
    _walk(a, b, "", fields)
    return [(WHOLE_FILE, *f) for f in fields]


def _bytes_difference(file: str, committed: str, replayed: str) -> Difference:
    """The first line where two texts differ, as a ``(bytes)`` difference."""
    a, b = committed.split("\n"), replayed.split("\n")
    number = next(i for i in range(max(len(a), len(b))) if a[i : i + 1] != b[i : i + 1])
    return Difference(
        file=file,
        record=f"line {number + 1}",
        field="(bytes)",
        committed=_compact(a[number]) if number < len(a) else None,
        replayed=_compact(b[number]) if number < len(b) else None,
    )


def compare_file(
    file: str, committed: bytes, replayed: bytes | None, limit: int = MAX_LISTED
) -> FileDifferences | None:
    """What differs between a committed result file and its replay (None: nothing).

    ``file`` (``<run>/<name>``) names it: a ``.jsonl`` file is compared record by record, a
    ``.json`` file field by field, a run card (``run.json``) without its ``environment`` block
    (the commit, Python and package versions of the machine that ran it, which a replay
    elsewhere legitimately changes). Bytes that differ where the values do not (formatting,
    order) are a ``(bytes)`` difference at the first line that differs. The first ``limit``
    differences are listed, the rest counted."""
    name = file.rsplit("/", 1)[-1]
    if replayed is None:
        missing = Difference(
            file=file,
            record=WHOLE_FILE,
            field=WHOLE_FILE,
            committed=f"{len(committed)} bytes",
            replayed=None,
        )
        return FileDifferences(file=file, listed=(missing,))
    if committed == replayed:
        return None
    ours = committed.decode("utf-8", errors="replace")
    theirs = replayed.decode("utf-8", errors="replace")
    found: list[Placed] = []
    if name.endswith(".jsonl"):
        found = _jsonl_differences(ours, theirs)
    elif name.endswith(".json"):
        values = _json_differences(name, ours, theirs)
        if values is None:
            return None
        found = values
    if not found:
        return FileDifferences(file=file, listed=(_bytes_difference(file, ours, theirs),))
    listed = tuple(
        Difference(file=file, record=r, field=f, committed=c, replayed=p)
        for r, f, c, p in found[:limit]
    )
    return FileDifferences(file=file, listed=listed, unlisted=max(len(found) - limit, 0))


def _line(d: Difference) -> str:
    where = d.file if d.record == WHOLE_FILE else f"{d.file} {d.record}"
    committed = "(absent)" if d.committed is None else d.committed
    replayed = "(absent)" if d.replayed is None else d.replayed
    return f"{where}: {d.field}: committed {committed}, replayed {replayed}"


def difference_lines(
    differences: Sequence[Difference],
    unlisted: dict[str, int] | None = None,
    limit: int | None = None,
) -> list[str]:
    """One readable line per difference (``<run>/<file> <record>: <field>: committed X,
    replayed Y``), and a line per file for those not listed; with ``limit``, at most that many
    difference lines, then one line counting the rest."""
    unlisted = unlisted or {}
    if limit is not None and len(differences) > limit:
        rest = len(differences) - limit + sum(unlisted.values())
        return [*map(_line, differences[:limit]), f"... and {rest} more difference(s)"]
    lines = []
    for i, d in enumerate(differences):
        lines.append(_line(d))
        last = i + 1 == len(differences) or differences[i + 1].file != d.file
        if last and unlisted.get(d.file):
            lines.append(f"{d.file}: {unlisted[d.file]} more difference(s), not listed")
    return lines


def flat(found: Iterable[FileDifferences]) -> tuple[list[Difference], dict[str, int]]:
    """The listed differences of several files in one list, and the unlisted count per file."""
    files = list(found)
    return [d for f in files for d in f.listed], {f.file: f.unlisted for f in files if f.unlisted}


def replay_status(folder: Path, replays: Sequence[RunReplay]) -> ReplayStatus:
    """The outcome of a finished replay of the baseline ``folder``."""
    differences, unlisted = flat(d for r in replays for d in r.differences)
    return ReplayStatus(
        baseline=str(folder),
        runs=[r.name for r in replays],
        identical=not any(r.differing for r in replays),
        differences=differences,
        unlisted=unlisted,
    )


def read_status(path: Path) -> ReplayStatus:
    """A recorded replay outcome (``replay.json``); a bad one is an error naming the file."""
    return _read_model(path, ReplayStatus, "baseline replay record")


def _run_command(run_command: RunCommand, name: str, argv: list[str]) -> None:
    """Run one recorded ``sgrgym`` command; its failure is an error naming the run and why."""
    try:
        run_command(argv)
    except UserError as exc:
        raise UserError(f"replaying {name} failed: {exc} (sgrgym {' '.join(argv)})") from None


def replay(folder: Path, out: Path, run_command: RunCommand, say: Say = _quiet) -> list[RunReplay]:
    """Replay every run of the baseline into ``out/<run>`` with ``run_command`` (the command
    line's :func:`sgrgym.cli.run_command`) and compare its result files
    (:func:`compare_file`)."""
    manifest = verify(folder)
    taken = [run.name for run in manifest.runs if (out / run.name).exists()]
    if taken:
        raise UserError(f"{out}: {', '.join(taken)} already exist; remove them or pick --out")
    out.mkdir(parents=True, exist_ok=True)
    replays = []
    with tempfile.TemporaryDirectory(prefix="sgrgym-baseline-") as scratch:
        cache = unpack_cache(folder, manifest, Path(scratch))
        for run in manifest.runs:
            say(f"replaying {run.name} ...")
            _run_command(run_command, run.name, command(run, cache, out / run.name, "replay"))
            compared = (
                compare_file(
                    f"{run.name}/{name}",
                    (folder / run.name / name).read_bytes(),
                    _bytes(out / run.name / name),
                )
                for name in run.results
            )
            found = tuple(c for c in compared if c is not None)
            replays.append(RunReplay(name=run.name, out=out / run.name, differences=found))
    return replays
