"""A fast, deterministic fake encoder for tests that must not load the real model.

Texts become hashed bags of lower-cased words and character 3-grams, so texts that share words or
spellings get similar vectors; nothing is learned and nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

__all__ = ["HashEncoder"]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEncoder:
    """Feature-hashing encoder implementing the ``Encoder`` protocol.

    Each word adds weight 1 and each character 3-gram of ``" word "`` adds weight 0.5 to a bucket picked by
    a seeded hash (with a hashed sign, so collisions cancel rather than pile up). Rows are L2-normalised;
    a text without any word character maps to a fixed unit vector so the output is always unit-norm.

    >>> enc = HashEncoder(dim=64)
    >>> v = enc.encode_queries(["send an email", "send email now", "weather in Paris"])
    >>> v.shape, v.dtype.name
    ((3, 64), 'float32')
    >>> bool(v[0] @ v[1] > v[0] @ v[2])
    True
    """

    def __init__(self, dim: int = 256, seed: int = 0):
        if dim < 2:
            raise ValueError(f"dim must be at least 2, got {dim}")
        self.dim = int(dim)
        self.seed = int(seed)
        self.name = f"hash-{self.dim}-s{self.seed}"
        self._salt = str(self.seed).encode() + b"\x00"
        self._cache: dict[str, tuple[int, float]] = {}

    def _bucket(self, feature: str) -> tuple[int, float]:
        hit = self._cache.get(feature)
        if hit is None:
            digest = hashlib.blake2b(self._salt + feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            hit = (value % self.dim, 1.0 if (value >> 63) & 1 else -1.0)
            if len(self._cache) < 200_000:
                self._cache[feature] = hit
        return hit

    def _encode_one(self, text: str, out: np.ndarray) -> None:
        words = _WORD.findall(text.lower())
        for word in words:
            idx, sign = self._bucket("w:" + word)
            out[idx] += sign
            padded = f" {word} "
            for i in range(len(padded) - 2):
                idx, sign = self._bucket("c:" + padded[i : i + 3])
                out[idx] += 0.5 * sign
        norm = float(np.linalg.norm(out))
        if norm == 0.0:
            idx, sign = self._bucket("<empty>")
            out[idx] = sign
        else:
            out /= norm

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode_* expects a sequence of strings, not a single string")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            self._encode_one(str(text), out[row])
        return out

    def encode_queries(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        """Encode queries; identical to :meth:`encode_tools` (the fake is symmetric)."""
        return self._encode(texts)

    def encode_tools(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        """Encode tool texts."""
        return self._encode(texts)

    def __repr__(self) -> str:
        return f"HashEncoder(dim={self.dim}, seed={self.seed})"
