"""Encoders: the interface, the embedded ONNX MiniLM default, encoders by name (``encoder_from_spec``:
``default``, ``hash[-DIM]`` or a model folder), and (with the train extra) fine-tuning."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from rated.encode.base import Encoder
from rated.encode.spec import encoder_from_spec

if TYPE_CHECKING:
    from rated.encode.onnx import OnnxEncoder

__all__ = ["INT8_ENV", "Encoder", "default_encoder", "encoder_from_spec", "int8_from_env"]

INT8_ENV = "RATED_ENCODER_INT8"
_defaults: dict[bool, OnnxEncoder] = {}
_lock = threading.Lock()
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def default_encoder(progress: bool = True, *, quantized: bool | None = None) -> OnnxEncoder:
    """The embedded all-MiniLM-L6-v2 encoder, prepared on first use and shared within the process.

    ``quantized`` (default: ``$RATED_ENCODER_INT8``, see :func:`int8_from_env`) picks the int8 graph:
    1.6-2x faster on the CPU and retrieval-neutral on the benchmarks (``benchmarks/int8_quality.py``), but
    its embeddings drift from the reference (cosine 0.97-0.99 at worst per text instead of >= 0.999).
    """
    if quantized is None:
        quantized = int8_from_env()
    with _lock:
        if quantized not in _defaults:
            _defaults[quantized] = _load_default(progress, quantized)
        return _defaults[quantized]


def int8_from_env() -> bool:
    """``$RATED_ENCODER_INT8``: ``1`` (or true/yes/on) for the int8 graph; unset, empty, ``0`` (false/no/off)
    for float. Anything else is an error: a typo must not silently keep the float graph."""
    value = os.environ.get(INT8_ENV, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    from rated.errors import ModelError

    raise ModelError(f"{INT8_ENV} must be 1 or 0, got {os.environ[INT8_ENV]!r}")


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
