"""Encoders by name: the one spelling that ``rated index --encoder`` and the library's ``encoder=`` share.

``default`` is the embedded all-MiniLM-L6-v2, ``hash`` / ``hash-DIM`` the fast fake (``HashEncoder``,
dim 256 unless given, for tests), and anything else a folder written by ``rated.encode.prepare`` (or a
fine-tuned model). Resolved in one place so that a name means the same encoder from the shell and from
Python, and a misspelled one is refused the same way.

>>> encoder_from_spec("hash-64", progress=False).name
'hash-64-s0'
>>> encoder_from_spec("hash-x", progress=False)
Traceback (most recent call last):
rated.errors.ConfigError: encoder 'hash-x': expected 'hash' or 'hash-DIM' (DIM an integer >= 2)
"""

from __future__ import annotations

import os

from rated.encode.base import Encoder
from rated.errors import ConfigError

__all__ = ["encoder_from_spec"]

_HASH_DIM = 256  # ``hash`` without a size


def encoder_from_spec(spec: str, *, progress: bool) -> Encoder:
    """``default`` -> the embedded MiniLM (prepared on first use, with a progress bar if ``progress``);
    ``hash[-DIM]`` -> ``HashEncoder``; otherwise an existing ONNX model folder. A ``ConfigError`` names
    ``spec`` when it is none of these (before anything is loaded)."""
    if spec == "default":
        from rated.encode import default_encoder

        return default_encoder(progress=progress)
    if spec == "hash" or spec.startswith("hash-"):
        from rated.encode.testing import HashEncoder

        dim = spec.removeprefix("hash").lstrip("-") or str(_HASH_DIM)
        if not dim.isdecimal() or int(dim) < 2:  # isdecimal: what int() reads ("²" is a digit, not decimal)
            raise ConfigError(f"encoder {spec!r}: expected 'hash' or 'hash-DIM' (DIM an integer >= 2)")
        return HashEncoder(dim=int(dim))
    if not os.path.isdir(spec):
        raise ConfigError(
            f"encoder {spec!r}: not 'default', 'hash', 'hash-DIM' or an existing ONNX model folder"
        )
    from rated.encode.onnx import OnnxEncoder

    return OnnxEncoder.load(spec)
