"""An Encoder wrapper that caches embeddings on disk, keyed by encoder, side and the exact texts.

Benchmarks encode the same tool pool and queries again and again (every method, every rerun, every
ablation): the first run pays, the rest read a ``.npy`` under ``rated_home()/cache/emb``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rated.encode.base import Encoder
from rated.paths import atomic_path, rated_home

__all__ = ["CachedEncoder"]


class CachedEncoder:
    """Implements ``Encoder`` by delegating to ``encoder`` once per distinct (side, texts) batch."""

    def __init__(self, encoder: Encoder, root: Path | None = None):
        self.encoder = encoder
        self.name = encoder.name
        self.dim = encoder.dim
        self.fingerprint = str(getattr(encoder, "fingerprint", "") or "")
        # another backend's embeddings are close to, not identical with, onnxruntime's: cache them apart
        backend = str(getattr(encoder, "backend", "") or "")
        if backend not in ("", "onnxruntime"):
            backend += "-" + str(getattr(encoder, "precision", "") or "")
        self._key = self.fingerprint + (f"|{backend}" if backend not in ("", "onnxruntime") else "")
        self.root = root or rated_home() / "cache" / "emb"
        self.hits = 0
        self.misses = 0

    def _path(self, side: str, texts: Sequence[str]) -> Path:
        h = hashlib.sha256(f"{self.name}|{self._key}|{self.dim}|{side}|{len(texts)}".encode())
        for t in texts:
            h.update(t.encode("utf-8"))
            h.update(b"\x1e")
        return self.root / f"{h.hexdigest()[:32]}.npy"

    def _cached(self, side: str, texts: Sequence[str], batch_size: int, progress: bool) -> np.ndarray:
        path = self._path(side, texts)
        if path.is_file():
            arr = np.load(path, allow_pickle=False)
            if arr.shape == (len(texts), self.dim):
                self.hits += 1
                return arr
        self.misses += 1
        fn = self.encoder.encode_queries if side == "q" else self.encoder.encode_tools
        arr = np.asarray(fn(list(texts), batch_size=batch_size, progress=progress), dtype=np.float32)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp, tmp.open("wb") as fh:  # a handle: np.save(path) would add ".npy"
            np.save(fh, arr, allow_pickle=False)
        return arr

    def encode_queries(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        return self._cached("q", texts, batch_size, progress)

    def encode_tools(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        return self._cached("t", texts, batch_size, progress)
