"""Encoders: the interface, the embedded ONNX MiniLM default, and (with the train extra) fine-tuning."""

from rated.encode.base import Encoder

__all__ = ["Encoder"]
