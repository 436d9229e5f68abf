"""TF-IDF cosine index (scikit-learn): the classic lexical baseline, with a score already in [0, 1]."""

from __future__ import annotations

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

    def scores(self, query: str) -> np.ndarray:
        """Cosine of the query's TF-IDF vector with every tool's (float32 in [0, 1], aligned with ``ids``)."""
        return self.scores_many([query])[0]

    def scores_many(self, queries: Sequence[str]) -> np.ndarray:
        if self._vectorizer is None or self._matrix is None:
            return np.zeros((len(queries), len(self._ids)), dtype=np.float32)
        q = self._vectorizer.transform(list(queries))
        return np.asarray((q.tocsr() @ self._matrix).toarray(), dtype=np.float32)
