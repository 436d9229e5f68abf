"""Berkeley Function Calling Leaderboard (BFCL) as a tool-retrieval benchmark.

The data ships inside the ``bfcl-eval`` wheel (Apache-2.0). The wheel is fetched once with the package
client (``pip download --no-deps --only-binary=:all:``) into ``rated_home()/cache`` and read as a zip:
nothing is installed. Every function offered to any single-turn question is a tool; because names repeat
with different meanings (``math.gcd`` has four descriptions), a tool is keyed by (name, description) and
its id is the name, suffixed with ``~`` and a short hash of the description when the name is ambiguous.
A question's relevant tools are the functions its ground truth calls, resolved within the functions
offered to that question. The irrelevance questions (no function fits) are kept apart for an abstention
check. Real user requests are the ``live_*`` categories; the others were written by the BFCL authors.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rated.bench.dataset import Dataset, Query
from rated.bench.datasets.common import Prepared, Problems, assign_splits, check_labels
from rated.catalog.schema import Tool
from rated.errors import DataError
from rated.package_download import DownloadError, cached_wheel, pip_download
from rated.paths import rated_home

__all__ = ["BFCL_VERSION", "CATEGORIES", "IRRELEVANCE", "bfcl_wheel", "load_bfcl"]

BFCL_VERSION = "2026.3.23"
CATEGORIES = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
IRRELEVANCE = ("irrelevance", "live_irrelevance")
EXTRA_POOL = ("live_relevance",)  # functions only: its questions carry no ground truth
FRACTIONS = (0.4, 0.2, 0.4)
SEED = 0


def bfcl_wheel(version: str = BFCL_VERSION, cache: Path | None = None) -> Path:
    """The ``bfcl-eval`` wheel in the cache, fetched with pip (no dependencies, nothing installed)."""
    cache = cache or rated_home() / "cache"
    cached = cached_wheel(cache, "bfcl-eval", version)
    if cached is not None:
        return cached
    try:
        return pip_download(f"bfcl-eval=={version}", cache, timeout=600)
    except DownloadError as exc:
        raise DataError(f"could not fetch bfcl-eval=={version} with pip: {exc.reason}") from None
    except OSError as exc:
        raise DataError(f"could not fetch bfcl-eval=={version} with pip: {exc}") from None


def _read(z: zipfile.ZipFile, member: str) -> list[dict[str, Any]]:
    path = f"bfcl_eval/data/{member}"
    try:
        raw = z.read(path).decode("utf-8")
    except KeyError:
        raise DataError(f"{path} is not in the bfcl-eval wheel") from None
    rows = []
    for lineno, line in enumerate(raw.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}: line {lineno}: invalid JSON ({exc.msg})") from None
    return rows


def _question_text(entry: dict[str, Any]) -> str:
    """The user's words of the first turn (system prompts are instructions to the model, not the request)."""
    turn = entry["question"][0]
    return "\n".join(str(m.get("content", "")) for m in turn if m.get("role") == "user").strip()


def _key(fn: dict[str, Any]) -> tuple[str, str]:
    return str(fn["name"]), str(fn.get("description") or "")


class _Pool:
    """Functions keyed by (name, description), with readable ids assigned once all are seen."""

    def __init__(self) -> None:
        self.functions: dict[tuple[str, str], dict[str, Any]] = {}
        self.first_seen: dict[tuple[str, str], str] = {}

    def add(self, fns: Iterable[dict[str, Any]], where: str) -> None:
        for fn in fns:
            self.functions.setdefault(_key(fn), fn)
            self.first_seen.setdefault(_key(fn), where)

    def ids(self) -> dict[tuple[str, str], str]:
        by_name: dict[str, int] = {}
        for name, _ in self.functions:
            by_name[name] = by_name.get(name, 0) + 1
        out = {}
        for name, desc in self.functions:
            digest = hashlib.sha1(desc.encode("utf-8")).hexdigest()[:6]
            out[(name, desc)] = name if by_name[name] == 1 else f"{name}~{digest}"
        return out

    def tools(self) -> list[Tool]:
        ids = self.ids()
        tools = []
        for key, fn in sorted(self.functions.items(), key=lambda kv: ids[kv[0]]):
            raw = fn.get("parameters")
            params: dict[str, Any] = raw if isinstance(raw, dict) else {}
            tools.append(
                Tool(
                    id=ids[key],
                    name=key[0],
                    description=key[1],
                    source="bfcl",
                    parameters=params,
                    provider=key[0].rsplit(".", 1)[0] if "." in key[0] else None,
                    extra={"bfcl_first_seen": self.first_seen[key]},
                )
            )
        return tools


def load_bfcl(wheel: Path | None = None) -> Prepared:
    """Convert the BFCL single-turn categories into a ``Dataset`` (plus irrelevance queries)."""
    wheel = wheel or bfcl_wheel()
    problems = Problems()
    pool = _Pool()
    raw_queries: list[tuple[str, str, list[tuple[str, str]]]] = []
    irrelevance_raw: list[tuple[str, str]] = []
    with zipfile.ZipFile(wheel) as z:
        for cat in CATEGORIES:
            answers = {a["id"]: a for a in _read(z, f"possible_answer/BFCL_v4_{cat}.json")}
            for entry in _read(z, f"BFCL_v4_{cat}.json"):
                pool.add(entry["function"], entry["id"])
                offered: dict[str, tuple[str, str]] = {}
                for fn in entry["function"]:
                    offered.setdefault(str(fn["name"]), _key(fn))
                answer = answers.get(entry["id"])
                if answer is None:
                    problems.add(f"query {entry['id']!r}: no ground truth in possible_answer, left out")
                    continue
                called = [name for call in answer["ground_truth"] for name in call]
                missing = [n for n in called if n not in offered]
                if missing:
                    problems.add(
                        f"query {entry['id']!r}: ground truth calls {missing}, not offered; left out"
                    )
                    continue
                raw_queries.append(
                    (entry["id"], _question_text(entry), [offered[n] for n in dict.fromkeys(called)])
                )
        for cat in IRRELEVANCE:
            for entry in _read(z, f"BFCL_v4_{cat}.json"):
                pool.add(entry["function"], entry["id"])
                irrelevance_raw.append((entry["id"], _question_text(entry)))
        for cat in EXTRA_POOL:
            for entry in _read(z, f"BFCL_v4_{cat}.json"):
                pool.add(entry["function"], entry["id"])
    ids = pool.ids()
    queries = _merge_repeats(
        [(qid, text, [ids[k] for k in keys]) for qid, text, keys in raw_queries], problems
    )
    splits = assign_splits([q.id for q in queries], FRACTIONS, SEED)
    queries = [Query(q.id, q.text, q.relevant, s) for q, s in zip(queries, splits, strict=True)]
    tools = pool.tools()
    queries = check_labels(queries, {t.id for t in tools}, problems)
    irr_splits = assign_splits([i for i, _ in irrelevance_raw], FRACTIONS, SEED)
    irrelevance = [
        {"id": qid, "text": text, "split": s}
        for (qid, text), s in zip(irrelevance_raw, irr_splits, strict=True)
    ]
    meta = {
        "source": f"bfcl-eval=={BFCL_VERSION} (Apache-2.0), single-turn categories",
        "categories": list(CATEGORIES),
        "split_fractions": list(FRACTIONS),
        "split_seed": SEED,
        "n_irrelevance": len(irrelevance),
    }
    return Prepared(Dataset("bfcl", tools, queries, meta), irrelevance, problems)


def _merge_repeats(rows: list[tuple[str, str, list[str]]], problems: Problems) -> list[Query]:
    """One query per distinct text: a text asked twice keeps the first id and the union of the labels."""
    by_text: dict[str, tuple[str, list[str]]] = {}
    for qid, text, rel in rows:
        if text in by_text:
            first_id, labels = by_text[text]
            labels.extend(r for r in rel if r not in labels)
            problems.add(f"query {qid!r}: same text as {first_id!r}; merged (labels united)")
        else:
            by_text[text] = (qid, list(rel))
    return [Query(qid, text, tuple(rel)) for text, (qid, rel) in by_text.items()]
