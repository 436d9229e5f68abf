"""What executes the encoder graph: onnxruntime (the default) or OpenVINO (the optional ``openvino`` extra).

OpenVINO runs the same weights in bfloat16 on CPUs with bfloat16 matrix units (Intel AMX or AVX-512
BF16). On such a CPU it encodes catalogs 1.5-2.8x as fast as onnxruntime's float path and long queries
1.3-1.7x as fast (README, "Latency"), and its embeddings agree with the float reference to cosine >= 0.9999
(``benchmarks/encode_throughput.py --backend openvino``), so it is the same model, not a cheaper one:
same name, same fingerprint, indexes stay valid. It is opt-in (``RATED_ENCODER_BACKEND=openvino``, or
``auto``: OpenVINO only where it pays off, i.e. installed and bfloat16 in the CPU's capabilities)
because its embeddings are close to, not bit-identical with, onnxruntime's: near-ties between tools can
order differently, and the published benchmark figures are onnxruntime's.

OpenVINO compiles kernels per input shape, so inputs are padded (masked) to a multiple of
``PAD_MULTIPLE`` tokens: few distinct shapes, each compiled once, results unchanged by the padding.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from pathlib import Path
from typing import Protocol

import numpy as np

from rated.encode.quantize import QUANTIZED_NAME
from rated.errors import ModelError
from rated.extras import install_hint
from rated.paths import atomic_path

__all__ = [
    "BACKENDS",
    "BACKEND_ENV",
    "DEFAULT_BACKEND",
    "GraphRunner",
    "OnnxRuntimeRunner",
    "OpenVinoRunner",
    "STANDARD_GRAPH_NAME",
    "open_runner",
    "openvino_speeds_up",
    "resolve_backend",
]

BACKEND_ENV = "RATED_ENCODER_BACKEND"
BACKENDS = ("auto", "onnxruntime", "openvino")
DEFAULT_BACKEND = "onnxruntime"
OUTPUT = "sentence_embedding"
STANDARD_GRAPH_NAME = "model.std.onnx"  # standard ONNX operators only: what OpenVINO reads
PAD_MULTIPLE = 16
logger = logging.getLogger(__name__)


class GraphRunner(Protocol):
    """Runs the sentence-encoder graph on a padded batch and returns unit-norm float32 rows."""

    backend: str
    precision: str  # what the matrix products compute in ("f32", "bf16", "int8")

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray: ...


class OnnxRuntimeRunner:
    """The default: onnxruntime's CPU provider on the fused graph (``model.onnx`` or its int8 copy)."""

    backend = "onnxruntime"

    def __init__(self, model_path: Path, threads: int):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        # Busy-waiting worker threads steal the CPU from everything else on a small machine and make
        # batch-1 latency worse, not better, when other processes run; sleep instead.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelError(f"onnxruntime cannot load {model_path}: {exc}") from None
        self._needs_type_ids = any(i.name == "token_type_ids" for i in self._session.get_inputs())
        self.precision = "int8" if Path(model_path).name == QUANTIZED_NAME else "f32"

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": mask}
        if self._needs_type_ids:
            feed["token_type_ids"] = np.zeros_like(ids)
        return self._session.run([OUTPUT], feed)[0].astype(np.float32, copy=False)


class OpenVinoRunner:
    """OpenVINO's CPU plugin on the standard-operator graph, bfloat16 where the CPU has it.

    An infer request holds buffers, so each thread gets its own; the compiled model is shared.
    """

    backend = "openvino"

    def __init__(self, model_path: Path, threads: int):
        import openvino as ov

        config = {
            "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "LATENCY",
            "NUM_STREAMS": 1,
        }
        try:
            core = ov.Core()
            self._compiled = core.compile_model(core.read_model(str(model_path)), "CPU", config)
            self._output = self._compiled.output(OUTPUT)
        except Exception as exc:  # OpenVINO raises RuntimeError with its own message
            raise ModelError(f"OpenVINO cannot load {model_path}: {exc}") from None
        self.precision = self._compiled.get_property("INFERENCE_PRECISION_HINT").to_string()
        self._local = threading.local()

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        width = ids.shape[1]
        padded = -(-width // PAD_MULTIPLE) * PAD_MULTIPLE
        if padded != width:  # padding id 0 with mask 0: ignored by attention and by the mean pooling
            ids = np.pad(ids, ((0, 0), (0, padded - width)))
            mask = np.pad(mask, ((0, 0), (0, padded - width)))
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._compiled.create_infer_request()
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        out = request.infer(feed)[self._output]
        return np.array(out, dtype=np.float32)  # a copy: the request reuses its output buffer


@functools.cache  # the CPU's capabilities do not change; asking OpenVINO costs a Core each time
def openvino_speeds_up() -> bool:
    """True when OpenVINO is installed and the CPU runs bfloat16 (where it beats onnxruntime's float)."""
    try:
        import openvino as ov
    except ImportError:
        return False
    try:
        return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    except Exception:  # no CPU plugin: treat as absent
        return False


def _requested(backend: str | None) -> str:
    choice = (backend or os.environ.get(BACKEND_ENV) or DEFAULT_BACKEND).strip().lower()
    if choice not in BACKENDS:
        source = "backend" if backend else BACKEND_ENV
        raise ModelError(f"{source} must be one of {', '.join(BACKENDS)}; got {choice!r}")
    return choice


def resolve_backend(backend: str | None = None, *, quantized: bool = False) -> str:
    """The runtime to use: ``backend``, else ``$RATED_ENCODER_BACKEND``, else onnxruntime; ``auto`` resolved.

    The int8 graph is onnxruntime-specific, so ``quantized`` resolves ``auto`` (and an ``openvino``
    preference from the environment) to onnxruntime; only an explicit ``backend="openvino"`` conflicts.
    """
    choice = _requested(backend)
    if choice == "openvino" and quantized:
        if backend is None:  # $RATED_ENCODER_BACKEND is a preference; asking for int8 is a choice
            return "onnxruntime"
        raise ModelError("backend='openvino' with quantized=True: the int8 graph runs on onnxruntime only")
    if choice == "openvino":
        try:
            import openvino  # noqa: F401
        except ImportError:
            hint = install_hint("openvino")
            raise ModelError(f"backend 'openvino' needs the openvino extra: {hint}") from None
        return choice
    if choice == "auto":
        return "openvino" if not quantized and openvino_speeds_up() else "onnxruntime"
    return choice


def standard_graph_path(model_dir: Path, onnx_path: Path) -> Path:
    """The standard-operator graph next to ``onnx_path``, exported from the folder's weights on first use."""
    from rated.encode.onnx_build import export_bert_onnx

    dest = Path(model_dir) / STANDARD_GRAPH_NAME
    if dest.is_file() and dest.stat().st_mtime >= onnx_path.stat().st_mtime:
        return dest
    for name in ("config.json", "model.safetensors"):
        if not (Path(model_dir) / name).is_file():
            raise ModelError(f"{model_dir} has no {name}: cannot build the graph OpenVINO reads")
    with atomic_path(dest) as tmp:
        export_bert_onnx(model_dir, tmp, fused=False)
    return dest


def open_runner(
    model_dir: Path, onnx_path: Path, threads: int, backend: str | None = None, *, quantized: bool = False
) -> GraphRunner:
    """A ``GraphRunner`` for ``onnx_path`` on the backend :func:`resolve_backend` picks.

    When ``auto`` picked OpenVINO but it cannot run this folder (no weights to export the graph it reads,
    a read-only folder, a graph it rejects), onnxruntime runs it instead; an explicit ``openvino`` fails.
    """
    if resolve_backend(backend, quantized=quantized) == "openvino":
        try:
            return OpenVinoRunner(standard_graph_path(model_dir, onnx_path), threads)
        except (ModelError, OSError) as exc:
            if _requested(backend) == "openvino":
                raise ModelError(f"OpenVINO cannot run {model_dir}: {exc}") from None
            logger.warning("OpenVINO cannot run %s (%s); using onnxruntime", model_dir, exc)
    return OnnxRuntimeRunner(onnx_path, threads)
