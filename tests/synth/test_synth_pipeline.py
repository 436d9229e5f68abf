"""The pipeline end to end with the fake server: filters, negatives, splits, and resuming without the LLM."""

from __future__ import annotations

import json

import pytest

from rated.catalog.schema import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.synth.generators.local import LocalGenerator
from rated.synth.generators.openai_compat import OpenAICompatGenerator
from rated.synth.pipeline import SynthConfig, synthesize
from rated.synth.records import Generation, read_pairs
from rated.synth.writer import GenerationLog


def _tools(n=6):
    tools = [
        Tool(id=f"t{i}", name=f"tool{i}", description=f"Tool number {i} does useful work") for i in range(n)
    ]
    tools.append(
        Tool(id="t0-copy", name="tool0copy", description="The same integration elsewhere", group="t0")
    )
    return tools


def _gen(server):
    return OpenAICompatGenerator(server.base_url, "fake", concurrency=2, timeout=5, sleep=lambda s: None)


def test_synthesize_writes_filtered_pairs_with_negatives(tmp_path, chat_server):
    out = tmp_path / "syn.jsonl"
    cfg = SynthConfig(
        queries_per_tool=5,
        consistency_k=0,
        hard_negatives=2,
        hard_margin=0,
        random_negatives=1,
        val_fraction=0.2,
    )
    stats = synthesize(_tools(), _gen(chat_server), out, encoder=HashEncoder(dim=128), config=cfg)
    recs = read_pairs(out)
    # 7 tools x (5 queries + 1 near-duplicate that dedupe removes)
    assert stats.raw == 42 and stats.after_dedupe == 35 and len(recs) == 35
    assert stats.generated_now == 7 and stats.failed == 0
    assert {r.tool_id for r in recs} == {t.id for t in _tools()}
    for r in recs:
        assert len(r.hard_negatives) == 2 and len(r.random_negatives) == 1
        negs = set(r.hard_negatives) | set(r.random_negatives)
        assert r.tool_id not in negs
        if r.group == "t0":  # never the other listing of the same integration
            assert not {"t0", "t0-copy"} & negs
    assert stats.splits == {"train": 28, "val": 7}
    assert (tmp_path / "syn.jsonl.log.jsonl").is_file()
    assert all(r.generator == "openai" and r.model == "fake" for r in recs)


def test_rerun_reuses_the_log_and_retries_failures(tmp_path, chat_server):
    out = tmp_path / "syn.jsonl"
    chat_server.fail_first = {"tool3": (1, 400)}  # not retryable: the tool fails in the first run
    cfg = SynthConfig(queries_per_tool=3, consistency_k=0, hard_negatives=0)
    first = synthesize(_tools(), _gen(chat_server), out, config=cfg)
    assert first.failed == 1 and "t3" in first.errors[0]
    n_requests = len(chat_server.requests)
    second = synthesize(_tools(), _gen(chat_server), out, config=cfg)
    assert second.reused == 6 and second.generated_now == 1 and second.failed == 0
    assert len(chat_server.requests) == n_requests + 1  # only the failed tool was asked again
    third = synthesize(
        _tools(), _gen(chat_server), out, config=SynthConfig(queries_per_tool=3, max_per_tool=1)
    )
    assert third.generated_now == 0 and len(chat_server.requests) == n_requests + 1
    assert len(read_pairs(out)) == 7  # a changed filter is applied from the log, without the LLM


def test_consistency_filter_drops_off_topic_queries(tmp_path):
    tools = [
        Tool(id="weather", name="weather", description="weather forecast rain temperature"),
        Tool(id="email", name="email", description="send email message"),
    ]
    log = GenerationLog(tmp_path / "syn.jsonl.log.jsonl")
    log.append(
        Generation(
            "weather", ("will it rain tomorrow weather forecast please", "send an email message to Bob")
        )
    )
    log.append(Generation("email", ("send an email message to my boss today",)))
    log.close()
    stats = synthesize(
        tools,
        LocalGenerator(llama=object()),
        tmp_path / "syn.jsonl",
        encoder=HashEncoder(dim=256),
        config=SynthConfig(consistency_k=1, val_fraction=0.0),
    )
    recs = read_pairs(tmp_path / "syn.jsonl")
    assert stats.after_cross_tool == 3 and stats.after_consistency == 2
    assert sorted(r.text for r in recs) == [
        "send an email message to my boss today",
        "will it rain tomorrow weather forecast please",
    ]


def test_same_text_for_two_integrations_is_dropped(tmp_path):
    tools = [Tool(id="a", name="a", description=""), Tool(id="b", name="b", description="")]
    log = GenerationLog(tmp_path / "s.log")
    log.append(Generation("a", ("please do the thing for me now", "only a wants this one here")))
    log.append(Generation("b", ("Please do the thing for me, now!",)))
    log.close()
    stats = synthesize(
        tools,
        LocalGenerator(llama=object()),
        tmp_path / "s.jsonl",
        log_path=tmp_path / "s.log",
        config=SynthConfig(val_fraction=0.0),
    )
    assert [r.text for r in read_pairs(tmp_path / "s.jsonl")] == ["only a wants this one here"]
    assert stats.after_dedupe == 3 and stats.after_cross_tool == 1


def test_torn_log_line_is_ignored(tmp_path):
    path = tmp_path / "x.log"
    path.write_text(
        json.dumps({"tool_id": "a", "queries": ["q one two three four"]}) + "\n" + '{"tool_id": "b", "que'
    )
    log = GenerationLog(path)
    assert log.done == {"a"}
    log.append(Generation("b", ("q",), error="boom"))  # failures are not logged
    assert log.done == {"a"}
    log.close()


def test_duplicate_ids_and_empty_catalog_are_rejected(tmp_path):
    gen = LocalGenerator(llama=object())
    with pytest.raises(ConfigError, match="no tools"):
        synthesize([], gen, tmp_path / "o.jsonl")
    dup = [Tool(id="a", name="a"), Tool(id="a", name="b")]
    with pytest.raises(ConfigError, match="duplicate tool id 'a'"):
        synthesize(dup, gen, tmp_path / "o.jsonl")
