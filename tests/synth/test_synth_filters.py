"""Text filters and the encoder round-trip filter keep usable queries and drop the rest."""

from __future__ import annotations

import numpy as np

from rated.catalog.schema import Tool
from rated.encode.testing import HashEncoder
from rated.synth.filters import consistency_mask, copies_description, dedupe, jaccard, length_ok


def test_length_bounds_are_inclusive():
    assert not length_ok("four words only here")
    assert length_ok("five words are right here")
    assert length_ok(" ".join(["w"] * 120))
    assert not length_ok(" ".join(["w"] * 121))


def test_jaccard_and_dedupe_threshold():
    assert jaccard("", "") == 0.0
    assert jaccard("a b c d", "a b c d") == 1.0
    # 3 shared of 4 = 0.75 > 0.7: dropped; 0.6 stays
    assert dedupe(["a b c", "a b c d", "a b e f g"]) == ["a b c", "a b e f g"]
    assert dedupe(["a b c", "a b c d"], threshold=0.8) == ["a b c", "a b c d"]


def test_copy_detection_span_and_near_copy():
    desc = "Search the web for recent news articles about any topic and return the top results with links."
    assert copies_description("please search the web for recent news articles about any topic today", desc)
    assert not copies_description("find me the latest headlines about the elections", desc)
    # short description: near-copy by Jaccard
    assert copies_description("Get the weather for a city", "Get the weather for a city.")
    assert not copies_description("Send an email to my manager about the meeting", "Send an email")
    assert not copies_description("anything at all goes here", "")


def _tools():
    return [
        Tool(id="weather", name="weather forecast", description="weather forecast temperature rain city"),
        Tool(
            id="weather2",
            name="weather forecast",
            description="weather forecast temperature rain",
            group="weather",
        ),
        Tool(id="email", name="send email", description="send email message inbox recipient"),
        Tool(id="stocks", name="stock price", description="stock price market ticker shares"),
    ]


def test_consistency_keeps_queries_whose_group_is_in_top_k():
    tools = [Tool(id=t.id, name=t.name, description=t.description, group=t.group or t.id) for t in _tools()]
    enc = HashEncoder(dim=512)
    queries = [
        "will it rain in my city tomorrow, weather forecast",
        "send an email message to Bob",
        "send email now",
    ]
    groups = ["weather", "email", "stocks"]  # the last one is about email, labelled stocks: inconsistent
    mask = consistency_mask(queries, groups, tools, enc, k=1)
    assert mask.tolist() == [True, True, False]
    # with k = pool size everything passes
    assert consistency_mask(queries, groups, tools, enc, k=10).all()


def test_consistency_empty_and_precomputed_vectors():
    tools = _tools()
    enc = HashEncoder(dim=64)
    assert consistency_mask([], [], tools, enc).shape == (0,)
    vecs = np.eye(len(tools), 64, dtype=np.float32)
    mask = consistency_mask(["anything at all"], ["email"], tools, enc, k=4, tool_vecs=vecs)
    assert mask.tolist() == [True]
