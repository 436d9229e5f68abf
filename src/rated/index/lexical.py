"""BM25 index (bm25s) over tool texts, with the identifier-splitting tokenizer.

Adding or removing tools rebuilds the index from the stored texts: for catalogs of thousands of tools that
takes milliseconds and needs no encoder. Besides raw BM25 scores the index gives each query's *score
bound*, the sum over its terms of the best score any tool gets for that term: ``score / bound`` lies in
[0, 1] and says how much of the query's achievable lexical evidence a tool has.
"""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np

from rated.errors import UnknownToolError
from rated.index.ids import check_new_ids
from rated.index.tokenize import tokenize

__all__ = ["BM25Index"]


class BM25Index:
    """Okapi BM25 (Lucene variant) over string-id'd texts.

    >>> idx = BM25Index()
    >>> idx.add(["w", "m"], ["getWeatherForecast: weather for a city", "sendEmail: send a mail message"])
    >>> idx.ids[int(np.argmax(idx.scores("what is the weather forecast in Paris")))]
    'w'
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75, stem: bool = True):
        self.k1 = float(k1)
        self.b = float(b)
        self.stem = bool(stem)
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._pos: dict[str, int] = {}
        self._bm25: bm25s.BM25 | None = None
        self._vocab: dict[str, int] = {}
        self._term_max = np.zeros(0, dtype=np.float32)

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> list[str]:
        return list(self._ids)

    def tokens(self, text: str) -> list[str]:
        return tokenize(text, stem=self.stem)

    def add(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
        check_new_ids(ids, self._pos)
        self._ids.extend(ids)
        self._texts.extend(texts)
        self._rebuild()

    def remove(self, ids: Sequence[str]) -> None:
        for tool_id in ids:
            if tool_id not in self._pos:
                raise UnknownToolError(tool_id)
        drop = set(ids)
        kept = [(i, t) for i, t in zip(self._ids, self._texts, strict=True) if i not in drop]
        self._ids = [i for i, _ in kept]
        self._texts = [t for _, t in kept]
        self._rebuild()

    def _rebuild(self) -> None:
        self._pos = {tool_id: p for p, tool_id in enumerate(self._ids)}
        if not self._ids:
            self._bm25, self._vocab, self._term_max = None, {}, np.zeros(0, dtype=np.float32)
            return
        corpus = [self.tokens(t) or [""] for t in self._texts]
        model = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        model.index(corpus, show_progress=False)
        self._bm25 = model
        self._vocab = dict(model.vocab_dict)
        data, indptr = model.scores["data"], model.scores["indptr"]
        term_max = np.zeros(len(indptr) - 1, dtype=np.float32)
        nonempty = np.flatnonzero(np.diff(indptr) > 0)
        if len(nonempty):
            term_max[nonempty] = np.maximum.reduceat(data, indptr[nonempty])
        self._term_max = term_max

    def _query_ids(self, query: str) -> list[int]:
        n_cols = len(self._term_max)
        return [i for i in (self._vocab.get(t) for t in self.tokens(query)) if i is not None and i < n_cols]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every tool (float32, aligned with ``ids``); zeros when no query word is indexed."""
        token_ids = self._query_ids(query)
        if self._bm25 is None or not token_ids:
            return np.zeros(len(self._ids), dtype=np.float32)
        return np.asarray(self._bm25.get_scores_from_ids(token_ids), dtype=np.float32)

    def score_bound(self, query: str) -> float:
        """Sum over the query's indexed terms of the best per-term score: no tool can score above it."""
        token_ids = self._query_ids(query)
        return float(self._term_max[token_ids].sum()) if token_ids else 0.0

    def search(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` positions (int64) and BM25 scores (float32), best first."""
        scores = self.scores(query)
        k = max(0, min(int(k), len(scores)))
        top = np.argpartition(-scores, k - 1)[:k] if 0 < k < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")][:k]
        return top.astype(np.int64), scores[top]
