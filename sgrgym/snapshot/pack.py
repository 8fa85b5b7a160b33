"""Snapshot packs: ``<pack>/manifest.json`` + ``<pack>/warc/*.warc.gz``, pinned by sha256.

The manifest names every WARC file with its sha256, byte count and record count, the
canonicalization rules (version and hash) the pack's index uses, and the sites it holds with
their sources and licences. A pack is pinned by the sha256 of its ``manifest.json`` bytes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import NamedTuple
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import canonical_json, sha256_bytes, sha256_file
from sgrgym.core.home import home_path
from sgrgym.core.io import write_atomic
from sgrgym.core.version import __version__
from sgrgym.snapshot.urls import RULES_VERSION, CanonRules
from sgrgym.snapshot.warc import MAX_RECORD_BYTES, WarcError, read_response, scan_warc

MANIFEST = "manifest.json"
WARC_DIR = "warc"
CACHE_DIR = ".cache"
PACK_FORMAT = "sgrgym-snapshot-pack/1"
PACK_NAME = r"^[a-z0-9][a-z0-9._-]{0,63}$"


class PackFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)
    records: int = Field(ge=0)

    @field_validator("path")
    @classmethod
    def _inside_pack(cls, value: str) -> str:
        path = PurePosixPath(value)
        if (
            path.is_absolute()
            or ".." in path.parts
            or "\\" in value
            or len(path.parts) != 2
            or path.parts[0] != WARC_DIR
            or not path.name.endswith(".warc.gz")
        ):
            raise ValueError(f"{value!r} is not a file warc/<name>.warc.gz inside the pack")
        return value


class SiteInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    host: str
    source: str | None = None
    licence: str | None = None


class Canonicalization(BaseModel):
    version: str
    sha256: str
    rules: CanonRules


class SkippedRecord(BaseModel):
    """A record left out of an import (``--skip-bad-records``): where it was and why."""

    model_config = ConfigDict(extra="forbid")

    source: str
    record: int = Field(ge=1, description="its number in the source file, from 1")
    reason: str


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = PACK_FORMAT
    pack: str = Field(pattern=PACK_NAME)
    version: str = "1"
    created: str
    sgrgym_version: str = __version__
    canonicalization: Canonicalization
    files: list[PackFile]
    record_count: int = Field(ge=0)
    sites: list[SiteInfo] = Field(default_factory=list)
    skipped: list[SkippedRecord] = Field(
        default_factory=list, description="records an import left out (written only if any)"
    )

    @property
    def rules(self) -> CanonRules:
        return self.canonicalization.rules


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def resolve_pack(spec: str | Path, root: str | Path | None = None) -> Path:
    """A pack folder from a path, or from a pack name under ``root`` (default: the data
    home's ``snapshots/``); clear error otherwise."""
    root = home_path("snapshots") if root is None else root
    path = Path(spec)
    if (path / MANIFEST).is_file():
        return path
    name = str(spec)
    if re.match(PACK_NAME, name) and (Path(root) / name / MANIFEST).is_file():
        return Path(root) / name
    available = sorted(p.parent.name for p in Path(root).glob(f"*/{MANIFEST}"))
    hint = f"; packs under {root}/: {', '.join(available)}" if available else ""
    raise UserError(f"{spec}: not a snapshot pack (no {MANIFEST}){hint}")


def manifest_sha256(pack_dir: Path) -> str:
    """The pack's pin: sha256 of the manifest file's bytes."""
    return sha256_bytes((pack_dir / MANIFEST).read_bytes())


def manifest_problems(manifest: Manifest) -> list[str]:
    """What in a manifest contradicts itself: rules against their sha256 and version, the
    total record count against the files' counts (the files' own counts are checked against
    the WARC files whenever they are scanned: by ``verify`` and when the index is built)."""
    problems = []
    canon = manifest.canonicalization
    if canon.sha256 != canon.rules.sha256():
        problems.append(
            f"canonicalization.sha256: {canon.sha256}, but the rules hash to {canon.rules.sha256()}"
        )
    if canon.rules.version != RULES_VERSION:
        problems.append(
            f"canonicalization.rules.version: {canon.rules.version!r} is not known to this "
            f"sgrgym (it implements version {RULES_VERSION!r})"
        )
    if canon.version != canon.rules.version:
        problems.append(
            f"canonicalization.version: {canon.version!r}, but the rules are version "
            f"{canon.rules.version!r}"
        )
    total = sum(entry.records for entry in manifest.files)
    if manifest.record_count != total:
        problems.append(f"record_count: {manifest.record_count}, but the files hold {total}")
    return problems


def load_manifest(pack_dir: Path, check: bool = True) -> Manifest:
    """The pack's manifest, parsed and (``check``) checked for contradictions (see
    :func:`manifest_problems`); anything wrong is a :class:`UserError` naming the field."""
    path = pack_dir / MANIFEST
    try:
        manifest = Manifest.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise UserError(f"{pack_dir}: not a snapshot pack (no {MANIFEST})") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a manifest file") from None
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'manifest'}: {e['msg']}" for e in exc.errors()
        )
        raise UserError(f"{path}: invalid manifest: {errors}") from None
    problems = manifest_problems(manifest) if check else []
    if problems:
        raise UserError(
            f"{path}: the manifest contradicts itself (altered?): " + "; ".join(problems)
        )
    return manifest


def pack_file(pack_dir: Path, relative: str) -> Path:
    """Resolve a manifest path, refusing anything that leaves the pack folder."""
    root = pack_dir.resolve()
    target = (root / relative).resolve()
    if root not in target.parents:
        raise UserError(f"{pack_dir}: path {relative!r} escapes the pack folder")
    return target


def check_files(pack_dir: Path, manifest: Manifest) -> list[str]:
    """Problems with the pack's files against the manifest (sha256, size, strays)."""
    problems = []
    listed = set()
    for entry in manifest.files:
        listed.add(entry.path)
        path = pack_file(pack_dir, entry.path)
        if not path.is_file():
            problems.append(f"{entry.path}: listed in the manifest but missing")
            continue
        digest, size = sha256_file(path)
        if size != entry.bytes:
            problems.append(f"{entry.path}: {size} bytes, manifest says {entry.bytes}")
        if digest != entry.sha256:
            problems.append(f"{entry.path}: sha256 {digest}, manifest says {entry.sha256}")
    warc_dir = pack_dir / WARC_DIR
    if warc_dir.is_dir():
        for path in sorted(warc_dir.iterdir()):
            if f"{WARC_DIR}/{path.name}" not in listed and path.name.endswith(".warc.gz"):
                problems.append(f"{WARC_DIR}/{path.name}: not listed in the manifest")
    return problems


def write_manifest(pack_dir: Path, manifest: Manifest) -> str:
    """Write ``manifest.json`` atomically; return its sha256 (the pack's pin)."""
    fields = manifest.model_dump(mode="json")
    if not fields["skipped"]:
        del fields["skipped"]  # manifests without skipped records keep their bytes (and pins)
    data = canonical_json(fields).encode("utf-8")
    write_atomic(pack_dir / MANIFEST, data)
    return sha256_bytes(data)


def warc_files(pack_dir: Path) -> list[Path]:
    return sorted((pack_dir / WARC_DIR).glob("*.warc.gz"))


SiteFor = Callable[[str, list[tuple[str, int]]], SiteInfo]


class RecordProblem(NamedTuple):
    """A record whose digests do not verify: pack file, byte offset, what failed."""

    file: str
    offset: int
    what: str

    def __str__(self) -> str:
        return f"{self.file}: record at offset {self.offset}: {self.what}"


def build_manifest(
    pack_dir: Path,
    pack: str,
    created: str,
    rules: CanonRules,
    site_for: SiteFor | None = None,
    check_digests: bool = False,
    cap: int = MAX_RECORD_BYTES,
) -> tuple[Manifest, list[RecordProblem]]:
    """Scan the pack's WARC files once and describe them in a :class:`Manifest`.

    ``site_for(host, places)`` gives the site entry of each host seen, ``places`` being the
    (file, offset) of its records; by default only the host is named. With
    ``check_digests`` the second value lists records whose digests do not verify, and the
    responses whose body cannot be served: one that decodes (gzip, deflate, brotli) past
    ``cap`` would otherwise be accepted here and break every later index, fetch and search.
    """
    files: list[PackFile] = []
    hosts: dict[str, list[tuple[str, int]]] = {}
    problems: list[RecordProblem] = []
    ids: dict[str, str] = {}  # WARC-Record-ID -> where it was first seen (ids are unique)
    for path in warc_files(pack_dir):
        relative = f"{WARC_DIR}/{path.name}"
        count = 0
        fd = os.open(path, os.O_RDONLY) if check_digests else -1
        try:
            for record in scan_warc(path, check_digests=check_digests, cap=cap):
                count += 1
                found = list(record.digest_problems)
                where = f"{relative} offset {record.offset}"
                if check_digests and record.record_id:
                    first = ids.setdefault(record.record_id, where)
                    if first != where:
                        found.append(
                            f"WARC-Record-ID {record.record_id} repeats the record at {first}"
                        )
                if check_digests and record.warc_type in ("response", "resource"):
                    try:
                        read_response(fd, str(path), record.offset, record.length, cap)
                    except WarcError as exc:
                        found.append(exc.reason)
                problems += [
                    RecordProblem(
                        relative, record.offset, f"{record.warc_type} {record.target_uri}: {p}"
                    )
                    for p in found
                ]
                host = urlsplit(record.target_uri).netloc if record.target_uri else ""
                if host:
                    hosts.setdefault(host, []).append((relative, record.offset))
        finally:
            if fd >= 0:
                os.close(fd)
        digest, size = sha256_file(path)
        files.append(PackFile(path=relative, sha256=digest, bytes=size, records=count))
    site_for = site_for or (lambda host, _places: SiteInfo(host=host))
    manifest = Manifest(
        pack=pack,
        created=created,
        canonicalization=Canonicalization(
            version=rules.version, sha256=rules.sha256(), rules=rules
        ),
        files=files,
        record_count=sum(f.records for f in files),
        sites=[site_for(host, places) for host, places in sorted(hosts.items())],
    )
    return manifest, problems
