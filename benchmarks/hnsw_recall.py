"""Does an HNSW dense part change what the semantic stage returns? Fused top-10, HNSW against exact.

For each prepared dataset (``rated data prepare NAME --out DIR``): the default semantic index (MiniLM
cosine fused with TF-IDF) built once with the exact flat dense index and once with an HNSW graph
(``SemanticConfig(dense_kind="hnsw")``, what ``auto`` picks above ``hnsw_threshold`` tools), every
query of the dataset searched in both; printed: the share of the flat top-10 the graph also returns
(recall@10), the share of queries with the identical top-10 and with the same top-1, and the graph's
build time. Embeddings are cached under RATED_HOME like the offline benchmark's.

Run: ``.venv/bin/python benchmarks/hnsw_recall.py DIR [DIR ...]``
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rated.bench.dataset import load_dataset
from rated.bench.embcache import CachedEncoder
from rated.catalog.text import tool_text
from rated.encode import default_encoder
from rated.index.semantic import DEFAULT_SEMANTIC, SemanticIndex


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="+", type=Path, help="prepared dataset folders")
    args = ap.parse_args(argv)
    encoder = CachedEncoder(default_encoder())
    for folder in args.datasets:
        ds = load_dataset(folder)
        tool_vecs = encoder.encode_tools([tool_text(t) for t in ds.tools])
        queries = [q.text for q in ds.queries]
        query_vecs = encoder.encode_queries(queries)
        flat = SemanticIndex.build(ds.tools, tool_vecs, DEFAULT_SEMANTIC.with_(dense_kind="flat"))
        start = time.perf_counter()
        graph = SemanticIndex.build(ds.tools, tool_vecs, DEFAULT_SEMANTIC.with_(dense_kind="hnsw"))
        build = time.perf_counter() - start
        exact = flat.search_many(queries, query_vecs, 10)[0].tolist()
        approx = graph.search_many(queries, query_vecs, 10)[0].tolist()
        recall = np.mean([len(set(a) & set(b)) / len(a) for a, b in zip(exact, approx, strict=True)])
        same = np.mean([a == b for a, b in zip(exact, approx, strict=True)])
        top1 = np.mean([a[0] == b[0] for a, b in zip(exact, approx, strict=True)])
        print(
            f"{folder.name}: {len(ds.tools):,} tools, {len(queries):,} queries: recall@10 {recall:.4f}, "
            f"identical top-10 {same:.4f}, same top-1 {top1:.4f}; HNSW build {build:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
