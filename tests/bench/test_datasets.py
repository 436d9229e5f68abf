import json
import zipfile
from collections import Counter

import pytest

from rated.bench.dataset import Dataset, Query, load_dataset
from rated.bench.datasets import prepare
from rated.bench.datasets.bfcl import CATEGORIES, load_bfcl
from rated.bench.datasets.common import Problems, add_distractors, assign_splits
from rated.bench.datasets.metatool import load_metatool
from rated.bench.datasets.stabletoolbench import load_stabletoolbench
from rated.catalog.schema import Tool
from rated.errors import DataError


def test_assign_splits_is_fixed_stratified_and_order_free():
    keys = [f"q{i}" for i in range(100)]
    strata = ["a" if i < 50 else "b" for i in range(100)]
    s1 = assign_splits(keys, (0.6, 0.2, 0.2), seed=0, strata=strata)
    s2 = assign_splits(keys[::-1], (0.6, 0.2, 0.2), seed=0, strata=strata[::-1])[::-1]
    assert s1 == s2
    assert Counter(s1) == {"train": 60, "val": 20, "test": 20}
    assert Counter(s for s, g in zip(s1, strata, strict=True) if g == "a") == {
        "train": 30,
        "val": 10,
        "test": 10,
    }
    assert assign_splits(keys, (0.6, 0.2, 0.2), seed=1) != assign_splits(keys, (0.6, 0.2, 0.2), seed=0)
    with pytest.raises(DataError):
        assign_splits(keys, (0.5, 0.2, 0.2), seed=0)


def test_add_distractors_renames_clashes_and_reports_them():
    ds = Dataset("d", [Tool(id="a", name="a")], [Query("q", "text", ("a",))])
    problems = Problems()
    out = add_distractors(ds, [Tool(id="a", name="other"), Tool(id="b", name="b")], problems)
    assert [t.id for t in out.tools] == ["a", "distractor:a", "b"]
    assert out.meta["n_distractors"] == 2 and len(problems) == 1 and "renamed" in problems.items[0]


def _fn(name, desc, **props):
    return {"name": name, "description": desc, "parameters": {"type": "dict", "properties": props}}


def _bfcl_wheel(path):
    """A miniature bfcl-eval wheel with the real layout (one JSON object per line)."""
    gcd_a, gcd_b = _fn("math.gcd", "Greatest common divisor."), _fn("math.gcd", "GCD of a list of numbers.")
    weather = _fn(
        "get_weather", "Current weather for a city.", city={"type": "string", "description": "City"}
    )
    files = {f"BFCL_v4_{c}.json": [] for c in ("irrelevance", "live_irrelevance", "live_relevance")}
    answers = {}
    for cat in CATEGORIES:  # the wheel holds every category the loader reads
        files[f"BFCL_v4_{cat}.json"] = []
        answers[f"possible_answer/BFCL_v4_{cat}.json"] = []
    q = files["BFCL_v4_simple_python.json"]
    q.append(
        {
            "id": "simple_python_0",
            "question": [[{"role": "user", "content": "gcd of 4 and 6"}]],
            "function": [gcd_a],
        }
    )
    q.append(
        {
            "id": "simple_python_1",
            "question": [[{"role": "user", "content": "gcd of 4, 6, 8"}]],
            "function": [gcd_b, weather],
        }
    )
    q.append(
        {
            "id": "simple_python_2",
            "question": [[{"role": "user", "content": "bad label"}]],
            "function": [weather],
        }
    )
    a = answers["possible_answer/BFCL_v4_simple_python.json"]
    a += [
        {"id": "simple_python_0", "ground_truth": [{"math.gcd": {}}]},
        {"id": "simple_python_1", "ground_truth": [{"math.gcd": {}}]},
        {"id": "simple_python_2", "ground_truth": [{"nope": {}}]},
    ]
    files["BFCL_v4_live_multiple.json"].append(
        {
            "id": "live_multiple_0",
            "question": [
                [{"role": "system", "content": "be nice"}, {"role": "user", "content": "weather in Paris?"}]
            ],
            "function": [weather, gcd_a],
        }
    )
    answers["possible_answer/BFCL_v4_live_multiple.json"].append(
        {"id": "live_multiple_0", "ground_truth": [{"get_weather": {"city": ["Paris"]}}]}
    )
    files["BFCL_v4_live_irrelevance.json"].append(
        {
            "id": "live_irrelevance_0",
            "question": [[{"role": "user", "content": "tell me a joke"}]],
            "function": [_fn("translate", "Translate text.")],
        }
    )
    with zipfile.ZipFile(path, "w") as z:
        for name, rows in {**files, **answers}.items():
            z.writestr(f"bfcl_eval/data/{name}", "\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_bfcl_keys_tools_by_name_and_description_and_keeps_irrelevance_apart(tmp_path):
    prepared = load_bfcl(_bfcl_wheel(tmp_path / "bfcl.whl"))
    ds = prepared.dataset
    ids = sorted(t.id for t in ds.tools)
    gcd_ids = [i for i in ids if i.startswith("math.gcd~")]
    assert len(gcd_ids) == 2 and "get_weather" in ids and "translate" in ids
    by_id = {q.id: q for q in ds.queries}
    assert by_id["simple_python_0"].relevant != by_id["simple_python_1"].relevant
    assert {by_id["simple_python_0"].relevant[0], by_id["simple_python_1"].relevant[0]} == set(gcd_ids)
    assert by_id["live_multiple_0"].text == "weather in Paris?"  # system prompt left out
    assert "simple_python_2" not in by_id and any("simple_python_2" in p for p in prepared.problems.items)
    assert [r["text"] for r in prepared.irrelevance] == ["tell me a joke"]


def test_prepare_writes_a_loadable_folder_with_distractors(tmp_path, monkeypatch):
    wheel = _bfcl_wheel(tmp_path / "bfcl.whl")
    monkeypatch.setitem(
        __import__("rated.bench.datasets", fromlist=["LOADERS"]).LOADERS, "bfcl", lambda: load_bfcl(wheel)
    )
    catalog = tmp_path / "cat.jsonl"
    catalog.write_text(
        json.dumps({"id": "get_weather", "name": "weather2"})
        + "\n"
        + json.dumps({"id": "x1", "name": "x one"})
        + "\n"
    )
    prepare("bfcl", tmp_path / "out", distractors=catalog)
    ds = load_dataset(tmp_path / "out")
    assert "distractor:get_weather" in ds.tool_ids and "x1" in ds.tool_ids
    assert (tmp_path / "out" / "irrelevance.jsonl").is_file()
    assert "renamed" in (tmp_path / "out" / "problems.txt").read_text()


def _stb_root(tmp_path):
    def api(tool, name, desc):
        return {
            "category_name": "Data",
            "tool_name": tool,
            "api_name": name,
            "api_description": desc,
            "method": "GET",
            "required_parameters": [{"name": "q", "type": "STRING", "description": "term"}],
            "optional_parameters": [],
        }

    entries = [
        {
            "query_id": i,
            "query": f"query {i}",
            "api_list": [
                api("Songs ", "search", "Find songs"),
                api("Songs ", "lyrics", ""),
                api("Maps", "geo", ""),
            ],
            "relevant APIs": [["Songs ", "search"], ["Maps", "geo"]] if i else [["Missing", "x"]],
        }
        for i in range(10)
    ]
    for name in (
        "G1_category",
        "G1_instruction",
        "G1_tool",
        "G2_category",
        "G2_instruction",
        "G3_instruction",
    ):
        (tmp_path / f"{name}.json").write_text(json.dumps(entries))
    return tmp_path


@pytest.mark.parametrize("level", ["api", "tool"])
def test_stabletoolbench_levels(tmp_path, level):
    prepared = load_stabletoolbench(level, root=_stb_root(tmp_path))
    ds = prepared.dataset
    expected = {"api": {"Songs::search", "Songs::lyrics", "Maps::geo"}, "tool": {"Songs", "Maps"}}[level]
    assert set(ds.tool_ids) == expected
    rel = {"api": ("Songs::search", "Maps::geo"), "tool": ("Songs", "Maps")}[level]
    assert all(q.relevant == rel for q in ds.queries) and len(ds.queries) == 54  # 6 files x 9 good queries
    assert any("not in its api_list" in p for p in prepared.problems.items)
    if level == "tool":
        assert "search (Find songs)" in next(t for t in ds.tools if t.id == "Songs").description
    with pytest.raises(DataError):
        load_stabletoolbench("endpoint", root=tmp_path)


def test_metatool_merges_repeated_queries_and_adds_multi_tool_ones(tmp_path):
    (tmp_path / "plugin_des.json").write_text(json.dumps({"A": "tool a", "B": "tool b"}))
    (tmp_path / "plugin_info.json").write_text(
        json.dumps([{"name_for_model": "A", "description_for_model": "x"}])
    )
    rows = ["Query,Tool"] + [f"question {i},A" for i in range(20)] + ["question 0,B", "ask c,C"]
    (tmp_path / "all_clean_data.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "multi_tool_query_golden.json").write_text(
        json.dumps([{"query": "both", "tool": ["A", "B"]}])
    )
    prepared = load_metatool(tmp_path)
    by_text = {q.text: q for q in prepared.dataset.queries}
    assert by_text["question 0"].relevant == ("A", "B") and by_text["both"].relevant == ("A", "B")
    assert "ask c" not in by_text and any("'C'" in p for p in prepared.problems.items)
    assert Counter(q.split for q in prepared.dataset.queries)["train"] >= 15


@pytest.mark.slow
@pytest.mark.parametrize("name", ["stabletoolbench", "metatool"])
def test_real_shared_benchmarks_convert_cleanly(name, tmp_path):
    from rated.paths import data_dir

    if data_dir() is None or not (data_dir() / name).is_dir():
        pytest.skip("shared benchmark data not available")
    prepared = prepare(name, tmp_path / name)
    assert len(prepared.dataset.queries) > 700 and len(prepared.problems) <= 2
