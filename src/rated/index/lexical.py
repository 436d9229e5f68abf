"""BM25 index (bm25s) over tool texts, with the identifier-splitting tokenizer.

Adding or removing tools rebuilds the index from the kept tokens (each text is tokenized once; a term
repeated across tools is stored once): no encoder, no text read again.
Besides raw BM25 scores the index gives each query's *score bound*, the sum over its terms of the best
score any tool gets for that term: ``score / bound`` lies in [0, 1] and says how much of the query's
achievable lexical evidence a tool has.
"""

from __future__ import annotations

import bm25s
import numpy as np

from rated.index.fusion import top_k
from rated.index.refit import Arrays, RefitTextIndex, pack_terms, unpack_terms
from rated.index.tokenize import tokenize

__all__ = ["BM25Index"]


class BM25Index(RefitTextIndex):
    """Okapi BM25 (Lucene variant) over string-id'd texts.

    >>> idx = BM25Index()
    >>> idx.add(["w", "m"], ["getWeatherForecast: weather for a city", "sendEmail: send a mail message"])
    >>> idx.ids[int(np.argmax(idx.scores("what is the weather forecast in Paris")))]
    'w'
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75, stem: bool = True):
        super().__init__()
        self.k1 = float(k1)
        self.b = float(b)
        self.stem = bool(stem)
        self._tokens: list[list[str]] = []  # per tool, aligned with ``_ids``
        self._terms: dict[str, str] = {}
        self._bm25: bm25s.BM25 | None = None
        self._vocab: dict[str, int] = {}
        self._term_max = np.zeros(0, dtype=np.float32)

    def tokens(self, text: str) -> list[str]:
        return tokenize(text, stem=self.stem)

    def _added(self, tokens: list[list[str]]) -> None:
        terms = self._terms  # one string object per term (not sys.intern: immortal on Python 3.12+)
        self._tokens.extend([terms.setdefault(t, t) for t in doc] for doc in tokens)
        self._refit()

    def _removed(self, keep: np.ndarray) -> None:
        self._tokens = [self._tokens[p] for p in keep.tolist()]
        # only the terms of the tools that remain (the same objects): a long-lived process whose catalog
        # churns would otherwise keep every term it ever indexed
        self._terms = {t: t for doc in self._tokens for t in doc}
        self._refit()

    def export(self) -> dict[str, np.ndarray]:
        """Each tool's tokens, as numbers into the terms (BM25's own model is refitted from them)."""
        terms = list(self._terms)  # exactly the terms of the tools now indexed
        code = {term: i for i, term in enumerate(terms)}
        lengths = np.fromiter(map(len, self._tokens), dtype=np.int64, count=len(self._tokens))
        words = (code[t] for doc in self._tokens for t in doc)
        flat = np.fromiter(words, dtype=np.int32, count=int(lengths.sum()))
        offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)])
        return {"terms": pack_terms(terms), "offsets": offsets, "tokens": flat}

    def _restored(self, n: int, arrays: Arrays) -> None:
        terms = unpack_terms(arrays["terms"])
        offsets, flat = np.asarray(arrays["offsets"]), np.asarray(arrays["tokens"])
        if (
            len(set(terms)) != len(terms)
            or offsets.dtype.kind != "i"
            or flat.dtype.kind != "i"
            or offsets.shape != (n + 1,)
            or flat.ndim != 1
            or offsets[0] != 0
            or offsets[-1] != len(flat)
            or np.any(np.diff(offsets) < 0)
            or (len(flat) and (flat.min() < 0 or flat.max() >= len(terms)))
        ):
            raise ValueError("the arrays do not describe a BM25 index of this pool")
        words = list(map(terms.__getitem__, flat.tolist()))
        bounds = offsets.tolist()
        self._terms = {term: term for term in terms}
        self._tokens = [words[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        self._refit()

    def _refit(self) -> None:
        if not self._ids:
            self._bm25, self._vocab, self._term_max = None, {}, np.zeros(0, dtype=np.float32)
            return
        corpus = [tokens or [""] for tokens in self._tokens]
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
        """Top-``k`` positions (int64) and BM25 scores (float32), best first (ties by position)."""
        return top_k(self.scores(query), k)
