"""Batch-1 latency of retrieval with and without reliability re-ranking (the paper's Table 3).

For each query, in one run: ``encode_only`` is encoding the query and searching the semantic index for
the top-K (the retrieval every method pays); each re-ranker then adds building the ``Candidates`` and
ranking them: ``static_prior`` (the fusion without feedback), ``global_mab`` and ``rated`` (the full
policy, warmed with feedback on many tools so that its state lookups are real). ``feedback_update`` is one
in-memory ``learn`` of RATED. The added cost of each re-ranker is timed on its own (not as a difference of
two noisy totals) and reported beside the totals, with the thread CPU time of the same calls (which a
busy machine inflates much less than wall time).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rated.bench.dataset import Dataset
from rated.catalog.text import tool_text
from rated.encode.base import Encoder
from rated.errors import ConfigError, DataError
from rated.outcome import Outcome
from rated.policy.base import BasePolicy, Candidates, Feedback
from rated.policy.registry import make_policy

__all__ = ["run_latency"]

RERANKERS = ("static_prior", "global_mab", "rated")


def _stats(ns: list[int]) -> dict[str, float]:
    a = np.asarray(ns, dtype=np.float64) / 1e6
    return {
        "mean_ms": float(a.mean()),
        "median_ms": float(np.median(a)),
        "p95_ms": float(np.percentile(a, 95)),
    }


def _warm(
    policy: BasePolicy, ids: list[str], providers: list[str], dim: int, n: int, rng: np.random.Generator
) -> None:
    """Give the policy realistic state: ``n`` outcomes (80% successes) on random tools."""
    ctx = rng.normal(size=(min(n, 512), dim)).astype(np.float32)
    ctx /= np.linalg.norm(ctx, axis=1, keepdims=True)
    for i in range(n):
        j = int(rng.integers(len(ids)))
        kind = "success" if rng.random() < 0.8 else str(rng.choice(["tool_error", "timeout", "auth_error"]))
        policy.learn(Feedback(ids[j], Outcome.of(kind), float(i), ctx[i % len(ctx)], providers[j]))


def run_latency(
    dataset: Dataset,
    encoder: Encoder,
    *,
    queries: int = 500,
    warmup: int = 50,
    k: int = 10,
    feedback: int = 5000,
    seed: int = 0,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Time ``queries`` batch-1 retrievals (after ``warmup`` untimed ones) over the dataset's pool."""
    from rated.catalog.prior import compute_prior
    from rated.index.semantic import SemanticIndex

    if queries < 1 or warmup < 0:
        raise ConfigError(f"need queries >= 1 and warmup >= 0, got queries {queries}, warmup {warmup}")
    texts = [q.text for q in dataset.queries]
    if not texts:
        raise DataError(f"dataset {dataset.name!r} has no queries to time")
    tools = list(dataset.tools)
    ids = [t.id for t in tools]
    providers = [t.provider_key for t in tools]
    prior = compute_prior(tools, encoder).r_static.astype(np.float32)
    index = SemanticIndex.build(tools, encoder.encode_tools([tool_text(t) for t in tools]))
    rng = np.random.default_rng(seed)
    policies = {
        name: make_policy(pol)
        for name, pol in (
            ("static_prior", "rated_no_feedback"),
            ("global_mab", "global_mab"),
            ("rated", "rated"),
        )
    }
    for p in policies.values():
        _warm(p, ids, providers, encoder.dim, feedback, rng)
    timings: dict[str, list[int]] = {n: [] for n in ("encode", "encode_only", "feedback_update", *RERANKERS)}
    added: dict[str, list[int]] = {n: [] for n in RERANKERS}
    cpu: dict[str, list[int]] = {n: [] for n in ("feedback_update", *RERANKERS)}
    clock, cpu_clock = time.perf_counter_ns, time.thread_time_ns
    now = float(feedback)
    for i in range(warmup + queries):
        q = texts[i % len(texts)]
        t0 = clock()
        vec = encoder.encode_queries([q])[0]
        t1 = clock()
        pos, sem = index.search(q, vec, k)
        t2 = clock()
        orders: dict[str, np.ndarray] = {}
        names = list(policies)
        names = names[i % len(names) :] + names[: i % len(names)]  # rotate: no policy always runs first
        for name in names:
            policy = policies[name]
            c3, t3 = cpu_clock(), clock()
            where = pos.tolist()  # built as Retriever._rank builds them
            cands = Candidates(
                tuple(map(ids.__getitem__, where)),
                sem,
                prior[pos],
                tuple(map(providers.__getitem__, where)),
                vec,
                now,
            )
            orders[name] = policy.rank(cands).order
            t4, c4 = clock(), cpu_clock()
            if i >= warmup:
                added[name].append(t4 - t3)
                cpu[name].append(c4 - c3)
                timings[name].append(t2 - t0 + t4 - t3)
        top = int(pos[int(orders["rated"][0])])
        fb = Feedback(ids[top], Outcome.of(bool(rng.random() < 0.8)), now, vec, providers[top])
        c5, t5 = cpu_clock(), clock()
        policies["rated"].learn(fb)
        t6, c6 = clock(), cpu_clock()
        now += 1.0
        if i >= warmup:
            timings["encode"].append(t1 - t0)
            timings["encode_only"].append(t2 - t0)
            timings["feedback_update"].append(t6 - t5)
            cpu["feedback_update"].append(c6 - c5)
        if on_progress is not None:
            on_progress(i + 1, warmup + queries)
    methods: dict[str, Any] = {name: _stats(v) for name, v in timings.items()}
    for name, v in cpu.items():
        c = _stats(v)
        methods[name].update({"cpu_median_ms": c["median_ms"], "cpu_p95_ms": c["p95_ms"]})
    for name in RERANKERS:
        a = _stats(added[name])
        methods[name].update(
            {"added_mean_ms": a["mean_ms"], "added_median_ms": a["median_ms"], "added_p95_ms": a["p95_ms"]}
        )
    return {
        "dataset": dataset.name,
        "tools": len(tools),
        "queries": queries,
        "warmup": warmup,
        "k": k,
        "encoder": getattr(encoder, "name", type(encoder).__name__),
        "feedback_warmup": feedback,
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "methods": methods,
    }
