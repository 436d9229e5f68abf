"""``prepare`` writes a dataset folder all or nothing: a failure midway keeps the previous folder intact."""

from __future__ import annotations

import errno
import os

import pytest

import rated.bench.datasets as datasets
from rated.bench.dataset import Dataset, Query, load_dataset, save_dataset
from rated.bench.datasets import Prepared, prepare
from rated.bench.datasets.common import Problems
from rated.catalog.schema import Tool
from rated.errors import DataError, RatedError


def tiny(version: int, irrelevance: bool = True) -> Prepared:
    """A small converted benchmark whose every file differs between versions."""
    tools = [Tool(id=f"t{i}", name=f"tool_{i}_v{version}", description=f"does {i}") for i in range(3)]
    queries = [Query(id=f"q{i}", text=f"do {i} (v{version})", relevant=(f"t{i}",)) for i in range(3)]
    return Prepared(
        dataset=Dataset(name="tiny", tools=tools, queries=queries, meta={"version": version}),
        irrelevance=[{"id": "x", "text": f"tell a joke v{version}"}] if irrelevance else [],
        problems=Problems([f"note from v{version}"]),
    )


def snapshot(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def out(tmp_path, monkeypatch):
    """``tiny`` prepared once (version 1) into tmp_path/out; the loader then answers version 2."""
    monkeypatch.setitem(datasets.LOADERS, "tiny", lambda: tiny(1))
    prepare("tiny", tmp_path / "out")
    monkeypatch.setitem(datasets.LOADERS, "tiny", lambda: tiny(2))
    return tmp_path / "out"


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device", str(args[-1]))


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def _half_then_fail(dataset, root):
    save_dataset(dataset, root)  # the new tools, queries and meta are written
    raise RuntimeError("bad input file")


@pytest.mark.parametrize(
    ("target", "fake", "error", "message"),
    [
        ("write_jsonl", _disk_full, RatedError, "irrelevance.jsonl: No space left on device"),
        ("write_jsonl", _interrupt, KeyboardInterrupt, ""),
        ("save_dataset", _half_then_fail, RuntimeError, "bad input file"),
    ],
)
def test_a_failure_midway_leaves_the_previous_output_intact(out, monkeypatch, target, fake, error, message):
    before = snapshot(out)
    assert b"v1" in before["tools.jsonl"] and "irrelevance.jsonl" in before
    monkeypatch.setattr(datasets, target, fake)
    with pytest.raises(error) as info:
        prepare("tiny", out)
    assert message in str(info.value)
    assert snapshot(out) == before
    assert os.listdir(out.parent) == ["out"]  # no temporary or set-aside folder left behind
    assert [t.name for t in load_dataset(out).tools] == ["tool_0_v1", "tool_1_v1", "tool_2_v1"]


def test_a_write_error_names_the_output_file_not_the_temporary_one(out, monkeypatch):
    monkeypatch.setattr(datasets, "write_jsonl", _disk_full)
    with pytest.raises(RatedError) as info:
        prepare("tiny", out)
    assert str(info.value) == (
        f"cannot write {out / 'irrelevance.jsonl'}: No space left on device ({out} was left as it was)"
    )


def test_success_replaces_every_file_and_drops_one_no_longer_written(out, monkeypatch):
    monkeypatch.setitem(datasets.LOADERS, "tiny", lambda: tiny(2, irrelevance=False))
    prepare("tiny", out)
    files = snapshot(out)
    assert sorted(files) == ["meta.json", "problems.txt", "queries.jsonl", "tools.jsonl"]
    assert b"v2" in files["tools.jsonl"] and files["problems.txt"] == b"note from v2\n"
    assert load_dataset(out).meta["version"] == 2 and os.listdir(out.parent) == ["out"]


def test_a_folder_with_other_files_is_refused_before_converting(out, monkeypatch):
    (out / "results.json").write_text("{}")
    before = snapshot(out)
    monkeypatch.setitem(datasets.LOADERS, "tiny", lambda: pytest.fail("converted before the check"))
    with pytest.raises(
        DataError, match=r"holds files that `rated data prepare` does not write \(results.json\)"
    ):
        prepare("tiny", out)
    assert snapshot(out) == before


def test_a_file_as_out_is_refused_before_converting(tmp_path, monkeypatch):
    target = tmp_path / "notes.txt"
    target.write_text("keep me")
    monkeypatch.setitem(datasets.LOADERS, "tiny", lambda: pytest.fail("converted before the check"))
    with pytest.raises(DataError, match="is a file, not a folder"):
        prepare("tiny", target)
    assert target.read_text() == "keep me"


@pytest.mark.parametrize("fail", [False, True])
def test_the_working_directory_as_out_is_replaced_and_stays_workable(out, monkeypatch, fail):
    """``--out .`` worked before the folder was swapped in whole; then renaming "." failed ("Device or
    resource busy"). The process stays in a live folder holding the new files (or the old on failure)."""
    monkeypatch.chdir(out)
    if fail:
        monkeypatch.setattr(datasets, "write_jsonl", _disk_full)
        with pytest.raises(RatedError, match=r"cannot write irrelevance.jsonl: No space left on device"):
            prepare("tiny", ".")
    else:
        prepare("tiny", ".")
    version = 1 if fail else 2
    assert load_dataset(".").meta["version"] == version and os.path.samefile(".", out)
    assert os.listdir(out.parent) == ["out"]
