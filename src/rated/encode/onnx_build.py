"""Build an ONNX graph for a BERT sentence encoder straight from safetensors weights (no torch).

The graph takes ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64, dynamic batch and sequence)
and returns ``last_hidden_state`` plus ``sentence_embedding`` (mean pooling over the attention mask, then L2
normalisation, as all-MiniLM-L6-v2's sentence-transformers pipeline does). Any BERT checkpoint with the same
architecture works, whatever its sizes, so a fine-tuned copy of the default encoder exports the same way.

Two flavours:

* ``fused=True`` (default) uses onnxruntime's contrib ops ``Attention`` and ``BiasGelu``, which every
  onnxruntime build has on the CPU (``SkipLayerNormalization`` is left out: slower than plain ops on CPU).
* ``fused=False`` uses standard ONNX operators only (opset 17), for other runtimes.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from rated.errors import ModelError

__all__ = [
    "GRAPH_VERSION",
    "OPSET",
    "BertConfig",
    "build_bert_onnx",
    "export_bert_onnx",
    "load_bert_weights",
]

OPSET = 17
# Bump when the graph changes (not only its weights), so prepared folders get rebuilt: 2 = no SkipLayerNorm.
GRAPH_VERSION = 2
_MS_DOMAIN = "com.microsoft"
_PREFIXES = ("bert.", "model.", "0.auto_model.", "auto_model.")
_ACTIVATIONS = ("gelu", "relu")


@dataclass(frozen=True)
class BertConfig:
    """The architecture fields of a Hugging Face BERT ``config.json`` that the graph depends on."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ModelError(
                f"hidden_size {self.hidden_size} is not divisible by num_attention_heads "
                f"{self.num_attention_heads}"
            )
        if self.hidden_act not in _ACTIVATIONS:
            supported = ", ".join(_ACTIVATIONS)
            raise ModelError(f"unsupported hidden_act {self.hidden_act!r}; supported: {supported}")

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BertConfig:
        """Read the fields we need; reject configs this builder would silently get wrong."""
        model_type = data.get("model_type", "bert")
        if model_type != "bert":
            raise ModelError(f"only BERT encoders can be exported, config says model_type={model_type!r}")
        if data.get("position_embedding_type", "absolute") != "absolute":
            raise ModelError("only absolute position embeddings are supported")
        fields = cls.__dataclass_fields__
        try:
            return cls(**{name: data[name] for name in fields if name in data})
        except TypeError as exc:  # a required field is missing
            raise ModelError(f"BERT config is missing a field: {exc}") from None

    @classmethod
    def from_json(cls, path: str | Path) -> BertConfig:
        path = Path(path)
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as exc:
            raise ModelError(f"cannot read BERT config {path}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_bert_weights(path: str | Path) -> dict[str, np.ndarray]:
    """Load a safetensors checkpoint as float32 arrays named like ``BertModel`` (prefixes stripped).

    Checkpoints saved from ``BertForX`` (``bert.``) or a sentence-transformers module (``0.auto_model.``)
    carry a prefix; it is removed so every source maps to the same names.
    """
    from safetensors.numpy import load_file

    path = Path(path)
    try:
        raw = load_file(str(path))
    except Exception as exc:  # safetensors raises its own error types
        raise ModelError(f"cannot read weights {path}: {exc}") from None
    out: dict[str, np.ndarray] = {}
    for name, array in raw.items():
        for prefix in _PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        if array.dtype.kind == "f":
            array = array.astype(np.float32, copy=False)
        out[name] = array
    return out


class _Graph:
    """Accumulates nodes and initializers with unique names."""

    def __init__(self, weights: dict[str, np.ndarray]):
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def weight(self, name: str, transpose: bool = False) -> str:
        try:
            array = self.weights[name]
        except KeyError:
            raise ModelError(f"checkpoint has no tensor {name!r}") from None
        if transpose:
            array = np.ascontiguousarray(array.T)
        return self.const(array.astype(np.float32, copy=False), name + (".T" if transpose else ""))

    def const(self, array: np.ndarray, name: str | None = None) -> str:
        name = name or self._name("const")
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def _name(self, op: str) -> str:
        self._n += 1
        return f"{op}_{self._n}"

    def op(
        self, op_type: str, inputs: list[str], n_out: int = 1, domain: str = "", name: str = "", **attrs: Any
    ) -> Any:
        """Add a node; ``name`` labels weight-bearing ones (``encoder.layer.3.ffn_out``) for quantisation."""
        outs = [self._name(op_type) for _ in range(n_out)]
        node_name = name or outs[0]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=node_name, domain=domain, **attrs))
        return outs[0] if n_out == 1 else outs


def _embeddings(g: _Graph, cfg: BertConfig) -> str:
    word = g.op("Gather", [g.weight("embeddings.word_embeddings.weight"), "input_ids"])
    seq_len = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const(np.array(1, dtype=np.int64))], axis=0)
    positions = g.op("Range", [g.const(np.array(0, dtype=np.int64)), seq_len, g.const(np.array(1, np.int64))])
    pos = g.op("Gather", [g.weight("embeddings.position_embeddings.weight"), positions])
    seg = g.op("Gather", [g.weight("embeddings.token_type_embeddings.weight"), "token_type_ids"])
    summed = g.op("Add", [g.op("Add", [word, seg]), pos])
    return g.op(
        "LayerNormalization",
        [summed, g.weight("embeddings.LayerNorm.weight"), g.weight("embeddings.LayerNorm.bias")],
        axis=-1,
        epsilon=cfg.layer_norm_eps,
    )


def _qkv(g: _Graph, p: str) -> tuple[str, str]:
    """Packed ``[hidden, 3*hidden]`` query/key/value weight and ``[3*hidden]`` bias."""
    names = [f"{p}.attention.self.{n}" for n in ("query", "key", "value")]
    for n in names:
        for part in (".weight", ".bias"):
            if n + part not in g.weights:
                raise ModelError(f"checkpoint has no tensor {n + part!r}")
    w = np.concatenate([g.weights[n + ".weight"].T for n in names], axis=1)
    b = np.concatenate([g.weights[n + ".bias"] for n in names])
    w_name = g.const(np.ascontiguousarray(w, dtype=np.float32), f"{p}.qkv.weight")
    return w_name, g.const(b.astype(np.float32), f"{p}.qkv.bias")


def _attention_standard(g: _Graph, cfg: BertConfig, x: str, p: str, mask_bias: str) -> str:
    w, b = _qkv(g, p)
    qkv = g.op("Add", [g.op("MatMul", [x, w], name=f"{p}.qkv"), b])
    q, k, v = g.op("Split", [qkv, g.const(np.array([cfg.hidden_size] * 3, np.int64))], n_out=3, axis=-1)
    heads = g.const(np.array([0, 0, cfg.num_attention_heads, cfg.head_size], np.int64))
    q = g.op("Transpose", [g.op("Reshape", [q, heads])], perm=[0, 2, 1, 3])
    k = g.op("Transpose", [g.op("Reshape", [k, heads])], perm=[0, 2, 3, 1])
    v = g.op("Transpose", [g.op("Reshape", [v, heads])], perm=[0, 2, 1, 3])
    scale = g.const(np.array(1.0 / math.sqrt(cfg.head_size), np.float32))
    scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), mask_bias])
    ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    ctx = g.op("Transpose", [ctx], perm=[0, 2, 1, 3])
    return g.op("Reshape", [ctx, g.const(np.array([0, 0, cfg.hidden_size], np.int64))])


def _attention_fused(g: _Graph, cfg: BertConfig, x: str, p: str, mask_index: str) -> str:
    w, b = _qkv(g, p)
    return g.op(
        "Attention",
        [x, w, b, mask_index],
        domain=_MS_DOMAIN,
        name=f"{p}.qkv",
        num_heads=cfg.num_attention_heads,
    )


def _add_layernorm(g: _Graph, cfg: BertConfig, y: str, residual: str, bias: str, ln: str) -> str:
    """``LayerNorm(y + bias + residual)``; ``y`` is a MatMul output without its bias."""
    # onnxruntime's fused SkipLayerNormalization measured 3.6x slower on the CPU than these three ops
    gamma, beta = g.weight(f"{ln}.weight"), g.weight(f"{ln}.bias")
    summed = g.op("Add", [g.op("Add", [y, bias]), residual])
    return g.op("LayerNormalization", [summed, gamma, beta], axis=-1, epsilon=cfg.layer_norm_eps)


def _activation(g: _Graph, cfg: BertConfig, y: str, bias: str, fused: bool) -> str:
    """``act(y + bias)``: exact (erf) GELU as BERT uses, or ReLU."""
    if cfg.hidden_act == "relu":
        return g.op("Relu", [g.op("Add", [y, bias])])
    if fused:
        return g.op("BiasGelu", [y, bias], domain=_MS_DOMAIN)
    z = g.op("Add", [y, bias])
    erf = g.op("Erf", [g.op("Mul", [z, g.const(np.array(1.0 / math.sqrt(2.0), np.float32))])])
    half = g.op("Mul", [z, g.const(np.array(0.5, np.float32))])
    return g.op("Mul", [half, g.op("Add", [erf, g.const(np.array(1.0, np.float32))])])


def _layer(g: _Graph, cfg: BertConfig, x: str, i: int, mask: str, fused: bool) -> str:
    p = f"encoder.layer.{i}"
    attn = (_attention_fused if fused else _attention_standard)(g, cfg, x, p, mask)
    attn = g.op("MatMul", [attn, g.weight(f"{p}.attention.output.dense.weight", True)], name=f"{p}.attn_out")
    bias = g.weight(f"{p}.attention.output.dense.bias")
    x = _add_layernorm(g, cfg, attn, x, bias, f"{p}.attention.output.LayerNorm")
    inter = g.op("MatMul", [x, g.weight(f"{p}.intermediate.dense.weight", True)], name=f"{p}.ffn_in")
    inter = _activation(g, cfg, inter, g.weight(f"{p}.intermediate.dense.bias"), fused)
    out = g.op("MatMul", [inter, g.weight(f"{p}.output.dense.weight", True)], name=f"{p}.ffn_out")
    return _add_layernorm(g, cfg, out, x, g.weight(f"{p}.output.dense.bias"), f"{p}.output.LayerNorm")


def _mean_pool_normalize(g: _Graph, hidden: str, mask_f: str) -> str:
    m = g.op("Unsqueeze", [mask_f, g.const(np.array([-1], np.int64))])
    axis1 = g.const(np.array([1], np.int64))
    summed = g.op("ReduceSum", [g.op("Mul", [hidden, m]), axis1], keepdims=0)
    count = g.op("Max", [g.op("ReduceSum", [m, axis1], keepdims=0), g.const(np.array(1e-9, np.float32))])
    mean = g.op("Div", [summed, count])
    sq = g.op("ReduceSum", [g.op("Mul", [mean, mean]), g.const(np.array([-1], np.int64))], keepdims=1)
    norm = g.op("Max", [g.op("Sqrt", [sq]), g.const(np.array(1e-12, np.float32))])
    return g.op("Div", [mean, norm])


def build_bert_onnx(
    cfg: BertConfig, weights: dict[str, np.ndarray], *, fused: bool = True
) -> onnx.ModelProto:
    """Return an ONNX model computing BERT hidden states and the mean-pooled, L2-normalised embedding."""
    for n in ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight"):
        if n not in weights:
            raise ModelError(f"checkpoint has no tensor {n!r}; is it a BERT model?")
    got = weights["embeddings.word_embeddings.weight"].shape
    if got != (cfg.vocab_size, cfg.hidden_size):
        want = (cfg.vocab_size, cfg.hidden_size)
        raise ModelError(f"word embeddings have shape {got}, the config says {want}")
    g = _Graph(weights)
    mask_f = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    if fused:
        mask = g.op("Cast", ["attention_mask"], to=TensorProto.INT32)
    else:  # additive bias [B, 1, 1, S]: 0 where attended, -10000 on padding (as BERT does)
        inv = g.op("Sub", [g.const(np.array(1.0, np.float32)), mask_f])
        bias = g.op("Mul", [inv, g.const(np.array(-10000.0, np.float32))])
        mask = g.op("Unsqueeze", [bias, g.const(np.array([1, 2], np.int64))])
    x = _embeddings(g, cfg)
    for i in range(cfg.num_hidden_layers):
        x = _layer(g, cfg, x, i, mask, fused)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    g.nodes.append(helper.make_node("Identity", [_mean_pool_normalize(g, x, mask_f)], ["sentence_embedding"]))

    dims = ["batch", "sequence"]
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, dims)
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    outputs = [
        helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, cfg.hidden_size]),
        helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", cfg.hidden_size]),
    ]
    graph = helper.make_graph(g.nodes, "bert_sentence_encoder", inputs, outputs, initializer=g.inits)
    opsets = [helper.make_opsetid("", OPSET)]
    if fused:
        opsets.append(helper.make_opsetid(_MS_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="rated.encode.onnx_build")
    model.ir_version = 8  # readable by onnxruntime >= 1.14
    return model


def export_bert_onnx(checkpoint_dir: str | Path, out_path: str | Path, *, fused: bool = True) -> Path:
    """Export ``checkpoint_dir`` (``config.json`` + ``model.safetensors``) to ``out_path``.

    This is the entry point for fine-tuned checkpoints: save them as safetensors, then call this.
    """
    checkpoint_dir, out_path = Path(checkpoint_dir), Path(out_path)
    cfg = BertConfig.from_json(checkpoint_dir / "config.json")
    model = build_bert_onnx(cfg, load_bert_weights(checkpoint_dir / "model.safetensors"), fused=fused)
    onnx.save_model(model, str(out_path))
    return out_path
