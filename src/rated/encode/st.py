"""Adapter that lets any sentence-transformers model serve as an ``Encoder`` (needs the train extra)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rated.extras import install_hint

__all__ = ["SentenceTransformerEncoder"]


class SentenceTransformerEncoder:
    """Wrap ``sentence_transformers.SentenceTransformer``; rows are L2-normalised float32.

    Asymmetric models are honoured: queries go through ``encode_query`` and tools through
    ``encode_document`` when the installed sentence-transformers has them.
    """

    def __init__(self, model_name_or_path: str | Path, *, device: str = "cpu", **kwargs: Any):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImportError(
                "SentenceTransformerEncoder needs sentence-transformers and torch: " + install_hint("train")
            ) from exc
        self.model = SentenceTransformer(str(model_name_or_path), device=device, **kwargs)
        self.name = Path(str(model_name_or_path)).name or str(model_name_or_path)
        get_dim = getattr(self.model, "get_embedding_dimension", None)  # renamed in sentence-transformers 6
        dim = get_dim() if get_dim else self.model.get_sentence_embedding_dimension()
        if dim is None:
            raise ValueError(f"{model_name_or_path}: the model does not report an embedding dimension")
        self.dim = int(dim)

    def _encode(self, method: str, texts: Sequence[str], batch_size: int, progress: bool) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode_* expects a sequence of strings, not a single string")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        fn = getattr(self.model, method, self.model.encode)
        out = fn(
            texts,
            batch_size=batch_size,
            show_progress_bar=progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.ascontiguousarray(out, dtype=np.float32)

    def encode_queries(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        return self._encode("encode_query", texts, batch_size, progress)

    def encode_tools(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        return self._encode("encode_document", texts, batch_size, progress)
