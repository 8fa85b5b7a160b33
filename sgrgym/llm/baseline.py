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
Task and corpus paths in the commands are relative to the repository root, as the run cards
record them, so a replay runs from there.
"""

from __future__ import annotations

import json
import lzma
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sgrgym.errors import UserError
from sgrgym.hashing import canonical_json, sha256_file

MANIFEST = "manifest.json"
FORMAT = "sgrgym-llm-baseline"
_SHA256 = r"^[0-9a-f]{64}$"
_CHUNK = 1 << 20

Say = Callable[[str], None]


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


@dataclass(frozen=True)
class RunReplay:
    name: str
    out: Path
    differing: tuple[str, ...]  # result files whose bytes differ from the committed ones


def load(folder: Path) -> BaselineManifest:
    path = folder / MANIFEST
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read the baseline manifest ({exc.strerror})") from None
    try:
        return BaselineManifest.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise UserError(f"{path}: field {where}: {first['msg']}") from None


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
        raise UserError(f"{folder}: pinned file(s) missing: {', '.join(missing)}")
    extra = sorted(present - set(manifest.files))
    if extra:
        raise UserError(
            f"{folder}: file(s) not pinned in {MANIFEST}: {', '.join(extra)} "
            "(remove them, or re-pin with sgrgym.llm.baseline.pin_files)"
        )
    for name, expected in manifest.files.items():
        actual = sha256_file(folder / name)[0]
        if actual != expected:
            raise UserError(
                f"{folder / name}: sha256 {actual} differs from {expected} pinned in {MANIFEST}"
            )
    if manifest.cache.file not in manifest.files:
        raise UserError(f"{folder / MANIFEST}: cache.file {manifest.cache.file!r} is not pinned")
    for run in manifest.runs:
        for result in run.results:
            if f"{run.name}/{result}" not in manifest.files:
                raise UserError(
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
        raise UserError(
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


def _comparable(name: str, data: bytes | None) -> object:
    """What must be equal: the bytes of a result file; for a run card, everything but its
    ``environment`` block (the sgrgym commit, Python and package versions of the machine that
    ran it, which a replay elsewhere legitimately changes)."""
    if data is None or name != "run.json":
        return data
    card = json.loads(data)
    card.pop("environment", None)
    return card


def replay(folder: Path, out: Path, say: Say = _quiet) -> list[RunReplay]:
    """Replay every run of the baseline into ``out/<run>`` and compare its result files."""
    from sgrgym.cli import main

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
            argv = command(run, cache, out / run.name, "replay")
            code = main(argv)
            if code != 0:
                raise UserError(f"replaying {run.name} failed (exit {code}): sgrgym {argv}")
            differing = tuple(
                name
                for name in run.results
                if _comparable(name, _bytes(out / run.name / name))
                != _comparable(name, (folder / run.name / name).read_bytes())
            )
            replays.append(RunReplay(run.name, out / run.name, differing))
    return replays
