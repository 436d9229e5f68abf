"""TF-IDF cosine index (scikit-learn): the classic lexical baseline, with a score already in [0, 1]."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from rated.index.refit import RefitTextIndex
from rated.index.tokenize import tokenize

__all__ = ["TfidfIndex"]


class TfidfIndex(RefitTextIndex):
    """Sublinear-tf TF-IDF vectors, L2-normalised, scored by cosine; refit on every add/remove.

    >>> idx = TfidfIndex()
    >>> idx.add(["w", "m"], ["getWeatherForecast: weather for a city", "sendEmail: send a mail message"])
    >>> idx.ids[int(np.argmax(idx.scores("send a message to Bob")))]
    'm'
    """

    def __init__(self, stem: bool = True, ngram_max: int = 1, sublinear_tf: bool = True):
        super().__init__()
        self.stem = bool(stem)
        self.ngram_max = int(ngram_max)
        self.sublinear_tf = bool(sublinear_tf)
        self._vectorizer: TfidfVectorizer | None = None
        self._matrix = None
        self._vocabulary: dict[str, int] = {}
        self._idf = np.zeros(0)

    def _analyzer(self, text: str) -> list[str]:
        words = tokenize(text, stem=self.stem)
        if self.ngram_max < 2:
            return words
        grams = list(words)
        for n in range(2, self.ngram_max + 1):
            grams.extend(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
        return grams

    def _refit(self) -> None:
        if not self._ids or not any(self._analyzer(t) for t in self._texts):
            self._vectorizer, self._matrix = None, None
            return
        self._vectorizer = TfidfVectorizer(analyzer=self._analyzer, sublinear_tf=self.sublinear_tf)
        # stored transposed (terms x tools, CSR) so a query row times it needs no conversion per call
        self._matrix = self._vectorizer.fit_transform(self._texts).T.tocsr()
        self._vocabulary, self._idf = self._vectorizer.vocabulary_, self._vectorizer.idf_

    def scores(self, query: str) -> np.ndarray:
        """Cosine of the query's TF-IDF vector with every tool's (float32 in [0, 1], aligned with ``ids``).

        The query vector is computed here as ``TfidfVectorizer.transform`` defines it (counts, sublinear
        tf, idf, L2 norm) and multiplied by the rows of its few terms: the same scores as ``scores_many``
        (to float rounding) without scikit-learn's per-call validation, which costs about a millisecond.
        """
        out = np.zeros(len(self._ids), dtype=np.float64)
        if self._matrix is None:
            return out.astype(np.float32)
        counts = Counter(self._analyzer(query))
        terms = [(self._vocabulary[t], n) for t, n in counts.items() if t in self._vocabulary]
        if not terms:
            return out.astype(np.float32)
        cols = np.array([c for c, _ in terms])
        tf = np.array([n for _, n in terms], dtype=np.float64)
        weights = (np.log(tf) + 1.0 if self.sublinear_tf else tf) * self._idf[cols]
        weights /= np.sqrt(weights @ weights)
        indptr, indices, data = self._matrix.indptr, self._matrix.indices, self._matrix.data
        for col, w in zip(cols.tolist(), weights.tolist(), strict=True):
            lo, hi = indptr[col], indptr[col + 1]
            out[indices[lo:hi]] += w * data[lo:hi]
        return out.astype(np.float32)

    def scores_many(self, queries: Sequence[str]) -> np.ndarray:
        if self._vectorizer is None or self._matrix is None:
            return np.zeros((len(queries), len(self._ids)), dtype=np.float32)
        q = self._vectorizer.transform(list(queries))
        return np.asarray((q.tocsr() @ self._matrix).toarray(), dtype=np.float32)
