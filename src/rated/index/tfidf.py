"""TF-IDF cosine index: the classic lexical baseline, with a score already in [0, 1].

The weights are scikit-learn's ``TfidfVectorizer`` (``smooth_idf``, optional sublinear tf, L2-normalised
rows), computed here from a term-count matrix that is kept and updated in place: adding a tool counts
its own terms only and removing one drops its row, so a change costs a few sparse-matrix passes instead
of re-reading every text. The IDF of every term still changes with the pool, as it must.

After any changes the index is the one a fresh fit on the remaining texts makes, to the last bit: a row's
L2 norm is summed in column order, and columns are numbered as a fit meets the terms (text by text, each
text's terms in the order they first occur in it), so a removal renumbers them as a fit on what remains
would (each entry keeps that order, ``_first``), and forgets terms no remaining text has.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize

from rated.index.refit import Arrays, RefitTextIndex, pack_terms, unpack_terms
from rated.index.tokenize import tokenize

__all__ = ["TfidfIndex"]


class TfidfIndex(RefitTextIndex):
    """Sublinear-tf TF-IDF vectors, L2-normalised, scored by cosine.

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
        self._vocabulary: dict[str, int] = {}  # the terms of the tools in the pool, numbered as a fit would
        self._counts = sp.csr_matrix((0, 0), dtype=np.float64)  # tools x terms
        self._first = sp.csr_matrix((0, 0), dtype=np.int32)  # as _counts: where a text first has the term
        self._df = np.zeros(0, dtype=np.int64)
        self._idf = np.zeros(0)
        self._matrix: sp.csr_matrix | None = None  # terms x tools: a query row times it needs no transpose

    def tokens(self, text: str) -> list[str]:
        words = tokenize(text, stem=self.stem)
        if self.ngram_max < 2:
            return words
        grams = list(words)
        for n in range(2, self.ngram_max + 1):
            grams.extend(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
        return grams

    # ---- the model -----------------------------------------------------------------------------------
    def _count_rows(self, documents: Iterable[list[str]], grow: bool) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """Term counts of ``documents`` (rows), and where each term first occurs in its document; with
        ``grow``, unseen terms get new columns, else they are dropped (a query's words that no tool has).
        Terms are summed in scikit-learn's order (a tool's by column, a query's alphabetically): the same
        float sums, so the same scores to the last bit."""
        vocab = self._vocabulary
        indptr, indices, data, first = [0], [], [], []
        for terms in documents:
            counts = Counter(terms)
            for at, (term, n) in enumerate(counts.items() if grow else sorted(counts.items())):
                col = vocab.get(term)
                if col is None:
                    if not grow:
                        continue
                    col = vocab[term] = len(vocab)
                indices.append(col)
                data.append(n)
                first.append(at + 1)  # from 1: no explicit zero for scipy to drop
            indptr.append(len(indices))
        shape = (len(indptr) - 1, len(vocab))
        cols = np.array(indices, np.int64)
        rows = sp.csr_matrix((np.array(data, np.float64), cols, indptr), shape=shape)
        where = sp.csr_matrix((np.array(first, np.int32), cols.copy(), indptr), shape=shape)
        if grow:  # a tool's terms in column order (first seen first), as scikit-learn stores them
            rows.sort_indices()
            where.sort_indices()  # the same permutation: a row's columns are distinct
        return rows, where

    def _added(self, tokens: list[list[str]]) -> None:
        rows, where = self._count_rows(tokens, grow=True)
        width = len(self._vocabulary)
        old, old_first = self._counts, self._first
        old.resize((old.shape[0], width))  # new terms: columns of zeros for the old rows
        old_first.resize((old_first.shape[0], width))
        self._counts = sp.vstack([old, rows], format="csr")
        self._first = sp.vstack([old_first, where], format="csr")
        self._weigh()

    def export(self) -> dict[str, np.ndarray]:
        """The term counts and first positions (one sparsity pattern) and the terms in column order."""
        counts, first = self._counts, self._first
        same = np.array_equal(counts.indptr, first.indptr) and np.array_equal(counts.indices, first.indices)
        if not same:
            raise ValueError("term counts and first positions differ in pattern")  # never, by construction
        return {
            "terms": pack_terms(sorted(self._vocabulary, key=self._vocabulary.__getitem__)),
            "indptr": counts.indptr.astype(np.int64),
            "indices": counts.indices.astype(np.int32),
            "counts": counts.data.astype(np.int32),
            "first": first.data.astype(np.int32),
        }

    def _restored(self, n: int, arrays: Arrays) -> None:
        terms = unpack_terms(arrays["terms"])
        vocabulary = {term: col for col, term in enumerate(terms)}
        indptr = np.asarray(arrays["indptr"])
        indices, data, where = (np.asarray(arrays[k]) for k in ("indices", "counts", "first"))
        nnz = len(indices)
        if (
            len(vocabulary) != len(terms)
            or any(a.ndim != 1 or a.dtype.kind != "i" for a in (indptr, indices, data, where))
            or indptr.shape != (n + 1,)
            or indptr[0] != 0
            or indptr[-1] != nnz
            or np.any(np.diff(indptr) < 0)
            or data.shape != (nnz,)
            or where.shape != (nnz,)
            or (nnz and (indices.min() < 0 or indices.max() >= len(terms)))
            or (nnz and (data.min() < 1 or where.min() < 1))
        ):
            raise ValueError("the arrays do not describe a TF-IDF index of this pool")
        shape = (n, len(terms))
        counts = sp.csr_matrix((data.astype(np.float64), indices, indptr), shape=shape)
        first = sp.csr_matrix((where.astype(np.int32), indices.copy(), indptr.copy()), shape=shape)
        if not counts.has_canonical_format:  # columns ascending and distinct in every row
            raise ValueError("the TF-IDF counts are not in canonical order")
        first.has_canonical_format = True  # the same pattern
        self._vocabulary, self._counts, self._first = vocabulary, counts, first
        self._weigh()

    def _removed(self, keep: np.ndarray) -> None:
        self._counts, self._first = self._counts[keep], self._first[keep]
        self._renumber()
        self._weigh()

    def _renumber(self) -> None:
        """Number the terms as a fit on the remaining texts would, forgetting those no text has: by the
        first text that has a term, then where the term first occurs in that text."""
        first, width = self._first, len(self._vocabulary)
        span = int(first.data.max(initial=0)) + 1
        texts = np.repeat(np.arange(first.shape[0], dtype=np.int64), np.diff(first.indptr))
        never = np.iinfo(np.int64).max
        seen = np.full(width, never, dtype=np.int64)
        np.minimum.at(seen, first.indices, texts * span + first.data)  # per term: where a fit meets it
        live = np.flatnonzero(seen < never)
        order = live[np.argsort(seen[live], kind="stable")]  # old columns, in their new order
        if len(order) == width and np.array_equal(order, np.arange(width)):
            return
        renumber = np.full(width, -1, dtype=np.int64)
        renumber[order] = np.arange(len(order))
        self._vocabulary = {t: int(renumber[c]) for t, c in self._vocabulary.items() if renumber[c] >= 0}
        shape = (self._counts.shape[0], len(order))
        counts, first = self._counts, self._first
        self._counts = sp.csr_matrix((counts.data, renumber[counts.indices], counts.indptr), shape=shape)
        self._first = sp.csr_matrix((first.data, renumber[first.indices], first.indptr), shape=shape)
        self._counts.sort_indices()
        self._first.sort_indices()

    def _weigh(self) -> None:
        """TF-IDF rows from the counts, exactly as ``TfidfTransformer(smooth_idf=True)`` weighs them."""
        counts = self._counts
        n_docs = counts.shape[0]
        self._df = np.bincount(counts.indices, minlength=counts.shape[1])
        self._idf = np.log((1 + n_docs) / (1 + self._df)) + 1.0
        if not counts.nnz:
            self._matrix = None
            return
        weights = self._weights(counts.copy())
        self._matrix = weights.T.tocsr()

    def _weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        """Counts -> (sublinear) tf times idf, rows L2-normalised, in place; terms of no tool weigh 0."""
        if self.sublinear_tf:
            np.log(counts.data, out=counts.data)
            counts.data += 1.0
        counts.data *= np.where(self._df > 0, self._idf, 0.0)[counts.indices]
        counts.eliminate_zeros()
        return normalize(counts, norm="l2", copy=False)

    # ---- scoring -------------------------------------------------------------------------------------
    def scores(self, query: str) -> np.ndarray:
        """Cosine of the query's TF-IDF vector with every tool's (float32 in [0, 1], aligned with ``ids``).

        The query's few terms are weighted here and multiplied by their rows of the transposed matrix:
        the same scores as ``scores_many`` (to float rounding) without building a sparse query matrix.
        """
        out = np.zeros(len(self._ids), dtype=np.float64)
        if self._matrix is None:
            return out.astype(np.float32)
        counts = Counter(self.tokens(query))
        df, vocab = self._df, self._vocabulary
        terms = [(c, n) for c, n in ((vocab.get(t), n) for t, n in counts.items()) if c is not None and df[c]]
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
        """``scores`` of each query, as one ``(len(queries), len(ids))`` float32 array."""
        if self._matrix is None:
            return np.zeros((len(queries), len(self._ids)), dtype=np.float32)
        q = self._weights(self._count_rows((self.tokens(t) for t in queries), grow=False)[0])
        return np.asarray((q @ self._matrix).toarray(), dtype=np.float32)
