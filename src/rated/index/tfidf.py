"""TF-IDF cosine index (scikit-learn): the classic lexical baseline, with a score already in [0, 1]."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from rated.errors import UnknownToolError
from rated.index.ids import check_new_ids
from rated.index.tokenize import tokenize

__all__ = ["TfidfIndex"]


class TfidfIndex:
    """Sublinear-tf TF-IDF vectors, L2-normalised, scored by cosine; refit on every add/remove.

    >>> idx = TfidfIndex()
    >>> idx.add(["w", "m"], ["getWeatherForecast: weather for a city", "sendEmail: send a mail message"])
    >>> idx.ids[int(np.argmax(idx.scores("send a message to Bob")))]
    'm'
    """

    def __init__(self, stem: bool = True, ngram_max: int = 1, sublinear_tf: bool = True):
        self.stem = bool(stem)
        self.ngram_max = int(ngram_max)
        self.sublinear_tf = bool(sublinear_tf)
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._pos: dict[str, int] = {}
        self._vectorizer: TfidfVectorizer | None = None
        self._matrix = None

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> list[str]:
        return list(self._ids)

    def _analyzer(self, text: str) -> list[str]:
        words = tokenize(text, stem=self.stem)
        if self.ngram_max < 2:
            return words
        grams = list(words)
        for n in range(2, self.ngram_max + 1):
            grams.extend(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
        return grams

    def add(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
        check_new_ids(ids, self._pos)
        self._ids.extend(ids)
        self._texts.extend(texts)
        self._refit()

    def remove(self, ids: Sequence[str]) -> None:
        for tool_id in ids:
            if tool_id not in self._pos:
                raise UnknownToolError(tool_id)
        drop = set(ids)
        kept = [(i, t) for i, t in zip(self._ids, self._texts, strict=True) if i not in drop]
        self._ids = [i for i, _ in kept]
        self._texts = [t for _, t in kept]
        self._refit()

    def _refit(self) -> None:
        self._pos = {tool_id: p for p, tool_id in enumerate(self._ids)}
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
