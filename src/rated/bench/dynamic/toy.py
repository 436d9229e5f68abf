"""A tiny synthetic benchmark (tools with close alternatives, queries with labels) for tests and examples.

Each topic has ``per_topic`` interchangeable tools described in the same words (so a lexical retriever
puts them next to each other), spread over two providers, and ``queries_per_topic`` queries whose
relevant tools are the topic's tools.
"""

from __future__ import annotations

import numpy as np

from rated.bench.dataset import Dataset, Query
from rated.catalog.schema import Tool

__all__ = ["TOPICS", "toy_dataset"]

TOPICS = (
    ("weather", "forecast temperature rain wind for a city"),
    ("email", "send an email message to a recipient inbox"),
    ("flight", "search flight tickets between airports with dates"),
    ("translate", "translate text between languages"),
    ("stock", "stock price quote for a ticker symbol market"),
    ("recipe", "find cooking recipes from ingredients"),
    ("news", "latest news headlines about a topic"),
    ("currency", "convert currency exchange rates between money"),
    ("calendar", "create calendar events meetings schedule"),
    ("maps", "driving directions route distance between places"),
    ("music", "find songs lyrics artists albums"),
    ("movie", "movie ratings cast showtimes cinema"),
)


def toy_dataset(per_topic: int = 3, queries_per_topic: int = 4, topics: int = 12, seed: int = 0) -> Dataset:
    """A dataset of ``topics * per_topic`` tools and ``topics * queries_per_topic`` test queries."""
    rng = np.random.default_rng(seed)
    tools: list[Tool] = []
    queries: list[Query] = []
    for name, words in TOPICS[:topics]:
        ids = []
        for j in range(per_topic):
            tid = f"{name}_{j}"
            ids.append(tid)
            doc = "detailed documentation " * int(rng.integers(0, 3))
            tools.append(
                Tool(
                    id=tid,
                    name=f"{name} api {j}",
                    description=f"{words} {doc}".strip(),
                    provider=f"{name}-provider-{j % 2}",
                    tags=(name,),
                )
            )
        vocab = words.split()
        for i in range(queries_per_topic):
            picked = rng.choice(vocab, size=min(4, len(vocab)), replace=False)
            queries.append(
                Query(id=f"{name}-q{i}", text=f"please {' '.join(picked)} {name}", relevant=tuple(ids))
            )
    return Dataset(name="toy", tools=tools, queries=queries)
