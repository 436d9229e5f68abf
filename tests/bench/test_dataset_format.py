import json

import pytest

from rated import DataError, Tool
from rated.bench.dataset import Dataset, Query, load_dataset, save_dataset


def _ds() -> Dataset:
    tools = [Tool(id="a", name="alpha"), Tool(id="b", name="beta")]
    queries = [Query("q1", "find alpha", ("a",), "train"), Query("q2", "find both", ("a", "b"))]
    return Dataset("tiny", tools, queries)


def test_round_trip(tmp_path) -> None:
    save_dataset(_ds(), tmp_path)
    ds = load_dataset(tmp_path)
    assert ds.name == "tiny"
    assert ds.tool_ids == ["a", "b"]
    assert [q.relevant for q in ds.queries] == [("a",), ("a", "b")]
    assert [q.id for q in ds.split("test")] == ["q2"]


def test_every_bad_label_is_reported(tmp_path) -> None:
    save_dataset(_ds(), tmp_path)
    with (tmp_path / "queries.jsonl").open("a") as fh:
        fh.write(json.dumps({"id": "q3", "text": "x", "relevant": ["zz"]}) + "\n")
        fh.write(json.dumps({"id": "q4", "text": "y", "relevant": ["yy"], "split": "dev"}) + "\n")
    with pytest.raises(DataError) as err:
        load_dataset(tmp_path)
    msg = str(err.value)
    assert "'zz'" in msg and "'yy'" in msg and "'dev'" in msg and "3 problem" in msg


def test_missing_files_and_bad_json_are_named(tmp_path) -> None:
    with pytest.raises(DataError, match="tools.jsonl"):
        load_dataset(tmp_path)
    save_dataset(_ds(), tmp_path)
    (tmp_path / "tools.jsonl").write_text('{"id": "a", "name": "a"}\n{oops\n')
    with pytest.raises(DataError, match="line 2"):
        load_dataset(tmp_path)


def test_unknown_split_name_is_an_error() -> None:
    with pytest.raises(DataError, match="unknown split"):
        _ds().split("dev")
