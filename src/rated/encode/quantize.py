"""Opt-in int8 copy of a model folder's ONNX graph (dynamic quantization, per-channel int8 weights).

About 2x faster on CPUs with int8 dot-product instructions, but embeddings drift from the float model
(cosine 0.97-0.99 at worst per text, 0.974 on the stored fixture, mean about 0.994; retrieval quality
unchanged on BFCL, MetaTool and StableToolBench: ``benchmarks/int8_quality.py``), so it fails the 0.999
agreement bar and is opt-in.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from rated.errors import ModelError
from rated.paths import atomic_path

__all__ = ["QUANTIZED_NAME", "quantize_onnx", "quantized_model_path"]

QUANTIZED_NAME = "model.int8.onnx"
logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _quiet_onnxruntime_warnings() -> Iterator[None]:
    """onnxruntime's quantizer warns through the root logger, which would also install a handler there."""
    root = logging.getLogger()
    handler = logging.NullHandler() if not root.handlers else None
    drop = logging.Filter()
    drop.filter = lambda record: "onnxruntime" not in record.pathname  # type: ignore[method-assign]
    if handler is not None:
        root.addHandler(handler)
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)
        if handler is not None:
            root.removeHandler(handler)


def quantize_onnx(src: Path, dest: Path) -> Path:
    """Write an int8 dynamically quantised copy of ``src`` to ``dest`` (atomically)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    try:
        with atomic_path(dest) as tmp, _quiet_onnxruntime_warnings():
            quantize_dynamic(
                str(src),
                str(tmp),
                per_channel=True,
                weight_type=QuantType.QInt8,
                op_types_to_quantize=["MatMul", "Attention"],
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
    except Exception as exc:
        raise ModelError(f"cannot quantise {src}: {exc}") from None
    return dest


def quantized_model_path(model_dir: Path, onnx_path: Path, *, rebuild: bool = False) -> Path:
    """The int8 graph next to ``onnx_path``, built on first use (or again when ``rebuild``).

    One older than ``onnx_path`` is rebuilt, except in a folder that cannot be written: a prepared folder
    never changes its graph in place, so there the age only says how the folder was copied (``cp -r``
    stamps files in whatever order it copies them), and the copy is used as it is.
    """
    dest = Path(model_dir) / QUANTIZED_NAME
    exists = dest.is_file()
    if exists and not rebuild and dest.stat().st_mtime < onnx_path.stat().st_mtime:
        try:
            quantize_onnx(onnx_path, dest)
        except ModelError as exc:
            if not isinstance(exc.__context__, OSError):
                raise
            logger.warning("cannot rebuild %s (%s); using it as it is", dest, exc.__context__)
    elif rebuild or not exists:
        quantize_onnx(onnx_path, dest)
    return dest
