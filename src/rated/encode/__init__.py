"""Encoders: the interface, the embedded ONNX MiniLM default, and (with the train extra) fine-tuning."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from rated.encode.base import Encoder

if TYPE_CHECKING:
    from rated.encode.onnx import OnnxEncoder

__all__ = ["Encoder", "default_encoder"]

_default: OnnxEncoder | None = None
_default_lock = threading.Lock()


def default_encoder(progress: bool = True) -> OnnxEncoder:
    """The embedded all-MiniLM-L6-v2 encoder, prepared on first use and shared within the process."""
    global _default
    with _default_lock:
        if _default is None:
            from rated.encode.onnx import OnnxEncoder
            from rated.encode.prepare import prepare_minilm

            _default = OnnxEncoder.load(prepare_minilm(progress=progress))
        return _default
