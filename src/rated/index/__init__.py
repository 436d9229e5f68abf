"""Indexes over a tool pool: dense (faiss), lexical (BM25, TF-IDF), their fusion, and the semantic stage."""

from rated.index.dense import DenseIndex
from rated.index.lexical import BM25Index
from rated.index.semantic import DEFAULT_SEMANTIC, SemanticConfig, SemanticIndex
from rated.index.tfidf import TfidfIndex

__all__ = ["DEFAULT_SEMANTIC", "BM25Index", "DenseIndex", "SemanticConfig", "SemanticIndex", "TfidfIndex"]
