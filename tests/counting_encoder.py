"""``CountingEncoder``: a ``HashEncoder`` that records the tool texts it encodes, for tests that check
what an index change encoded (only new or changed tools) and what it took from the store."""

from __future__ import annotations

from rated.encode.testing import HashEncoder


class CountingEncoder(HashEncoder):
    """HashEncoder (same name, same embeddings) that records the tool texts it encodes in ``encoded``."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.encoded: list[str] = []

    def encode_tools(self, texts, **options):
        self.encoded.extend(texts)
        return super().encode_tools(texts, **options)
