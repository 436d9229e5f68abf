"""Batch-1 latency of retrieval with and without reliability re-ranking (the paper's Table 3).

For each query, in one run: ``encode_only`` is encoding the query and searching the semantic index for
the top-K (the retrieval every method pays); each re-ranker then adds building the ``Candidates`` and
ranking them: ``static_prior`` (the fusion without feedback), ``global_mab`` and ``rated`` (the full
policy, warmed with feedback on many tools so that its state lookups are real). ``feedback_update`` is one
in-memory ``learn`` of RATED. The added cost of each re-ranker is timed on its own (not as a difference of
two noisy totals) and reported beside the totals, with the thread CPU time of the same calls (which a
busy machine inflates much less than wall time).

Each re-ranker's cost is timed on two paths, one per query in turn (so that each follows an encode, as
cold as the other; half of the ``queries`` each): the public API (``Candidates(...)``, whose
constructor checks its arrays, then ``policy.rank``, which returns NumPy arrays): ``added_*`` and
``cpu_*``, and the totals; and the path that ``Retriever.retrieve`` runs (``Candidates._trusted`` on the
arrays it made itself, then ``policy._ranked``, plain Python values): ``live_added_*`` and ``live_cpu_*``
(without the hits the retriever then builds, which ``benchmarks/latency.py`` times); the warm-up queries
check that both paths rank alike. ``extra`` re-rankers (e.g. RATED as it was at an older revision) are
timed beside them in the same run, with RATED's history and feedback: a ratio between two of them is not
the difference of two runs on a noisy machine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
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


def _live_order(policy: BasePolicy, candidates: Candidates) -> list[int]:
    """The order as ``Retriever._rank`` gets it: ``_ranked``'s plain values from a policy whose ``rank`` is
    ``BasePolicy``'s, ``rank`` otherwise."""
    if isinstance(policy, BasePolicy) and type(policy).rank is BasePolicy.rank:
        return policy._ranked(candidates)[0]
    return np.asarray(policy.rank(candidates).order).tolist()


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
    extra: Mapping[str, BasePolicy] | None = None,
) -> dict[str, Any]:
    """Time ``queries`` batch-1 retrievals (after ``warmup`` untimed ones) over the dataset's pool; each of
    ``extra`` (fresh policies, by a name not among ``RERANKERS``) is warmed and fed back as ``rated`` is."""
    from rated.catalog.prior import compute_prior
    from rated.index.semantic import SemanticIndex

    if queries < 1 or warmup < 0:
        raise ConfigError(f"need queries >= 1 and warmup >= 0, got queries {queries}, warmup {warmup}")
    extra = dict(extra or {})
    clash = sorted(set(extra) & {"encode", "encode_only", "feedback_update", *RERANKERS})
    if clash:
        raise ConfigError(f"extra re-rankers need names of their own, got {', '.join(clash)}")
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
    for name, p in policies.items():
        if name == "rated":  # the extras get RATED's history: the same random draws
            history = rng.bit_generator.state
        _warm(p, ids, providers, encoder.dim, feedback, rng)
    for p in extra.values():
        same = np.random.default_rng()
        same.bit_generator.state = history
        _warm(p, ids, providers, encoder.dim, feedback, same)
    policies.update(extra)
    rerankers = (*RERANKERS, *extra)
    timings: dict[str, list[int]] = {n: [] for n in ("encode", "encode_only", "feedback_update", *rerankers)}
    added: dict[str, list[int]] = {n: [] for n in rerankers}
    cpu: dict[str, list[int]] = {n: [] for n in ("feedback_update", *rerankers)}
    live_added: dict[str, list[int]] = {n: [] for n in rerankers}
    live_cpu: dict[str, list[int]] = {n: [] for n in rerankers}
    clock, cpu_clock = time.perf_counter_ns, time.thread_time_ns
    now = float(feedback)
    for i in range(warmup + queries):
        q = texts[i % len(texts)]
        t0 = clock()
        vec = encoder.encode_queries([q])[0]
        t1 = clock()
        pos, sem = index.search(q, vec, k)
        t2 = clock()
        orders: dict[str, Any] = {}  # a list (the retriever's path) or an array (the API's)
        names = list(policies)
        names = names[i % len(names) :] + names[: i % len(names)]  # rotate: no policy always runs first
        ctx = np.asarray(vec, dtype=np.float32).ravel()  # the retriever checks its query embedding first
        live = (i - warmup) % 2 == 1  # one path per query, as cold as the other: the API's first
        make, context = (Candidates._trusted, ctx) if live else (Candidates, vec)
        for name in names:
            policy = policies[name]
            c3, t3 = cpu_clock(), clock()
            where = pos.tolist()
            cands = make(  # as Retriever._rank builds them (live), or through the checking constructor
                tuple(map(ids.__getitem__, where)),
                sem,
                prior[pos],
                tuple(map(providers.__getitem__, where)),
                context,
                now,
            )
            orders[name] = _live_order(policy, cands) if live else policy.rank(cands).order
            t4, c4 = clock(), cpu_clock()
            if i < warmup:  # both paths rank alike (checked while warming up, untimed)
                other = policy.rank(cands).order.tolist() if live else _live_order(policy, cands)
                if other != list(orders[name]):
                    raise RuntimeError(
                        f"{name} ranks otherwise on the retriever's path: {other}, {orders[name]}"
                    )
            elif live:
                live_added[name].append(t4 - t3)
                live_cpu[name].append(c4 - c3)
            else:
                added[name].append(t4 - t3)
                cpu[name].append(c4 - c3)
                timings[name].append(t2 - t0 + t4 - t3)
        top = int(pos[int(orders["rated"][0])])
        fb = Feedback(ids[top], Outcome.of(bool(rng.random() < 0.8)), now, vec, providers[top])
        c5, t5 = cpu_clock(), clock()
        policies["rated"].learn(fb)
        t6, c6 = clock(), cpu_clock()
        for p in extra.values():
            p.learn(fb)
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
    for name in rerankers:
        a = _stats(added[name])
        methods[name].update(
            {"added_mean_ms": a["mean_ms"], "added_median_ms": a["median_ms"], "added_p95_ms": a["p95_ms"]}
        )
        if live_added[name]:  # none with a single timed query
            la, lc = _stats(live_added[name]), _stats(live_cpu[name])
            methods[name].update(
                {
                    "live_added_median_ms": la["median_ms"],
                    "live_added_p95_ms": la["p95_ms"],
                    "live_cpu_median_ms": lc["median_ms"],
                    "live_cpu_p95_ms": lc["p95_ms"],
                }
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
