"""Encoders: the interface, the embedded ONNX MiniLM default, and (with the train extra) fine-tuning."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from rated.encode.base import Encoder

if TYPE_CHECKING:
    from rated.encode.onnx import OnnxEncoder

__all__ = ["INT8_ENV", "Encoder", "default_encoder"]

INT8_ENV = "RATED_ENCODER_INT8"
_defaults: dict[bool, OnnxEncoder] = {}
_lock = threading.Lock()


def default_encoder(progress: bool = True, *, quantized: bool | None = None) -> OnnxEncoder:
    """The embedded all-MiniLM-L6-v2 encoder, prepared on first use and shared within the process.

    ``quantized`` (default: ``$RATED_ENCODER_INT8`` == "1") picks the int8 graph: 1.6-2x faster on the
    CPU and retrieval-neutral on the benchmarks (``benchmarks/int8_quality.py``), but its embeddings
    drift from the reference (cosine 0.97-0.99 at worst per text instead of >= 0.999).
    """
    if quantized is None:
        quantized = os.environ.get(INT8_ENV, "").strip() == "1"
    with _lock:
        if quantized not in _defaults:
            _defaults[quantized] = _load_default(progress, quantized)
        return _defaults[quantized]


def _load_default(progress: bool, quantized: bool) -> OnnxEncoder:
    """Load the prepared model; one that fails to load because a file is damaged is prepared again."""
    from rated.encode.manifest import verify_model_dir
    from rated.encode.onnx import OnnxEncoder
    from rated.encode.prepare import prepare_minilm
    from rated.errors import ModelError

    model_dir = prepare_minilm(progress=progress)
    try:
        return OnnxEncoder.load(model_dir, quantized=quantized)
    except ModelError:
        try:
            verify_model_dir(model_dir, deep=True)
        except ModelError:  # damaged (same size, so the quick check passed): rebuild it, then load again
            return OnnxEncoder.load(prepare_minilm(progress=progress, deep=True), quantized=quantized)
        raise
