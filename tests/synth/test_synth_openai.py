"""The OpenAI-compatible generator against a local fake server: concurrency bound, retries, fatal errors."""

from __future__ import annotations

import pytest

from rated.errors import ConfigError
from rated.synth.generators.base import Job
from rated.synth.generators.openai_compat import OpenAICompatGenerator


def _jobs(names):
    return [
        Job(n, ({"role": "user", "content": f"Tool name: {n}\nWrite 3 different requests"},)) for n in names
    ]


def _gen(server, **kw):
    kw.setdefault("sleep", lambda s: None)
    return OpenAICompatGenerator(server.base_url, "fake-model", "sk-test", timeout=5, **kw)


def test_generates_every_job_with_bounded_concurrency(chat_server):
    names = [f"tool{i}" for i in range(12)]
    out = list(_gen(chat_server, concurrency=3).generate(_jobs(names)))
    assert sorted(g.tool_id for g in out) == sorted(names)
    assert all(g.ok and len(g.queries) == 4 for g in out)
    assert out[0].meta["model"] == "fake-model"
    assert 1 < chat_server.max_in_flight <= 3
    assert chat_server.headers[0]["Authorization"] == "Bearer sk-test"
    assert chat_server.requests[0]["model"] == "fake-model"


def test_retries_transient_errors_with_backoff(chat_server):
    chat_server.fail_first = {"flaky": (2, 503), "limited": (1, 429)}
    sleeps = []
    gen = _gen(chat_server, concurrency=1, max_retries=3, backoff=0.5, sleep=sleeps.append)
    out = {g.tool_id: g for g in gen.generate(_jobs(["flaky", "limited"]))}
    assert out["flaky"].ok and out["flaky"].meta["attempts"] == 3
    assert out["limited"].ok and out["limited"].meta["attempts"] == 2
    assert len(sleeps) == 3
    # full jitter: each delay within [0, backoff * 2**attempt]
    assert 0 <= sleeps[0] <= 0.5 and 0 <= sleeps[1] <= 1.0


def test_gives_up_after_max_retries(chat_server):
    chat_server.fail_first = {"down": (10, 500)}
    out = list(_gen(chat_server, max_retries=2).generate(_jobs(["down", "up"])))
    by_id = {g.tool_id: g for g in out}
    assert not by_id["down"].ok and "3 attempts" in by_id["down"].error
    assert by_id["up"].ok


def test_bad_key_is_fatal(chat_server):
    chat_server.status_always = 401
    with pytest.raises(ConfigError, match="401"):
        list(_gen(chat_server).generate(_jobs(["a", "b"])))


def test_unreachable_endpoint_is_a_per_job_error():
    gen = OpenAICompatGenerator("http://127.0.0.1:9/v1", "m", max_retries=1, timeout=1, sleep=lambda s: None)
    (out,) = list(gen.generate(_jobs(["a"])))
    assert not out.ok and "ConnectError" in out.error


def test_options_fall_back_to_environment(monkeypatch):
    monkeypatch.setenv("RATED_SYNTH_BASE_URL", "http://127.0.0.1:1234/v1/")
    monkeypatch.setenv("RATED_SYNTH_MODEL", "llama3")
    gen = OpenAICompatGenerator()
    assert (gen.base_url, gen.model) == ("http://127.0.0.1:1234/v1", "llama3")


def test_missing_settings_are_config_errors(monkeypatch):
    monkeypatch.delenv("RATED_SYNTH_BASE_URL", raising=False)
    monkeypatch.delenv("RATED_SYNTH_MODEL", raising=False)
    with pytest.raises(ConfigError, match="RATED_SYNTH_BASE_URL"):
        OpenAICompatGenerator()
    with pytest.raises(ConfigError, match="RATED_SYNTH_MODEL"):
        OpenAICompatGenerator("http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError, match="http"):
        OpenAICompatGenerator("localhost:1/v1", "m")
