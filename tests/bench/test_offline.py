import json

import numpy as np
import pytest

from rated.bench.dataset import Dataset, Query, save_dataset
from rated.bench.embcache import CachedEncoder
from rated.bench.offline import DEFAULT_METHODS, markdown_table, rerank_with_prior, run_offline, write_result
from rated.catalog.schema import Tool
from rated.cli import main
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError, DataError

TOOLS = [
    Tool(id="weather", name="getWeatherForecast", description="Weather forecast for a city."),
    Tool(id="email", name="send_email", description="Send an email message to a recipient."),
    Tool(id="flight", name="searchFlights", description="Search flights between two airports."),
    Tool(id="stock", name="stockQuote", description="Latest share price of a listed company."),
    Tool(id="news", name="topNews", description="Top news headlines for a topic."),
]
QUERIES = [
    Query("q1", "what is the weather forecast in Paris", ("weather",)),
    Query("q2", "send an email to Bob", ("email",)),
    Query("q3", "search flights from Rome to Oslo", ("flight",)),
    Query("q4", "share price of ACME and the latest news", ("stock", "news")),
    Query("v1", "email my boss", ("email",), split="val"),
]


@pytest.fixture()
def dataset_dir(tmp_path):
    root = save_dataset(Dataset("toy", TOOLS, QUERIES), tmp_path / "toy")
    (root / "irrelevance.jsonl").write_text(
        json.dumps({"id": "i1", "text": "tell me a joke", "split": "test"}) + "\n"
    )
    return root


def test_run_offline_reports_every_method_and_metric(dataset_dir, tmp_path):
    enc = CachedEncoder(HashEncoder(dim=128), root=tmp_path / "emb")
    result = run_offline(dataset_dir, DEFAULT_METHODS, encoder=enc, n_boot=200)
    assert result.n_queries == 4 and result.n_tools == 5 and list(result.methods) == list(DEFAULT_METHODS)
    for name, m in result.methods.items():
        assert set(m) == {"mrr", "recall@1", "recall@5", "hit@1", "hit@5", "ndcg@5"}
        assert all(0.0 <= v <= 1.0 for v in m.values())
        assert m["hit@5"] == 1.0  # five tools: everything is in the top 5
        lo, hi = result.ci95[name]["mrr"]
        assert lo <= m["mrr"] <= hi
    assert result.methods["bm25"]["mrr"] == 1.0  # every query shares words with its tool
    assert set(result.abstention) == {"dense", "semantic", "rated"}
    assert result.timing_ms["encode_query"] > 0
    # rerun: embeddings now come from the disk cache
    run_offline(dataset_dir, ["dense"], encoder=enc, n_boot=10)
    assert enc.hits >= 2
    out, png = write_result(result, tmp_path / "res" / "toy.json")
    payload = json.loads(out.read_text())
    assert (
        payload["methods"]["bm25"]["mrr"] == 1.0 and payload["n_queries"] == 4 and png.stat().st_size > 1000
    )
    assert "| bm25 | 1.000 |" in markdown_table(result)


def test_run_offline_errors(dataset_dir):
    with pytest.raises(ConfigError, match="unknown method"):
        run_offline(dataset_dir, ["splade"])
    with pytest.raises(ConfigError, match="needs an encoder"):
        run_offline(dataset_dir, ["dense"])
    with pytest.raises(DataError, match="no 'train'"):
        run_offline(dataset_dir, ["bm25"], split="train")


def test_rerank_with_prior_reorders_only_the_top_k():
    s_sem = np.array([0.90, 0.85, 0.50, 0.10], dtype=np.float32)
    r_static = np.array([0.0, 1.0, 1.0, 1.0], dtype=np.float32)
    order = np.argsort(-rerank_with_prior(s_sem, r_static, k=2), kind="stable").tolist()
    # 0.75*0.85 + 0.1 = 0.7375 beats 0.75*0.90 = 0.675; tool 2 stays third despite its prior
    assert order == [1, 0, 2, 3]


def test_cli_bench_offline_lexical_methods(dataset_dir, tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(
        ["bench", "offline", "--dataset", str(dataset_dir), "--methods", "tfidf,bm25", "--out", str(out)]
    )
    assert code == 0 and json.loads(out.read_text())["methods"]["tfidf"]["hit@5"] == 1.0
    assert "| tfidf |" in capsys.readouterr().out and out.with_suffix(".png").is_file()
    assert (
        main(["bench", "offline", "--dataset", str(dataset_dir), "--methods", "nope", "--out", str(out)]) == 2
    )


@pytest.mark.slow
def test_default_semantic_stage_beats_every_single_baseline_on_metatool_test(tmp_path):
    """The issue's target on the real benchmark with the embedded encoder (about 30 s on 2 cores)."""
    from rated.bench.datasets import prepare
    from rated.encode import default_encoder
    from rated.paths import data_dir

    if data_dir() is None or not (data_dir() / "metatool").is_dir():
        pytest.skip("shared MetaTool data not available")
    prepare("metatool", tmp_path / "metatool")
    enc = CachedEncoder(default_encoder(progress=False), root=tmp_path / "emb")
    result = run_offline(
        tmp_path / "metatool", ["tfidf", "bm25", "dense", "semantic"], encoder=enc, n_boot=10
    )
    best = max(result.methods[m]["mrr"] for m in ("tfidf", "bm25", "dense"))
    assert result.methods["semantic"]["mrr"] >= best > 0.5


def test_select_default_maximises_the_worst_case_gain_over_the_best_baseline():
    from rated.bench.ablation import ablation_table, select_default

    def row(mrr):
        return {"mrr": mrr}

    results = {
        "a": {"dense": row(0.5), "bm25": row(0.7), "tfidf": row(0.6), "x": row(0.9), "y": row(0.72)},
        "b": {"dense": row(0.6), "bm25": row(0.4), "tfidf": row(0.4), "x": row(0.55), "y": row(0.62)},
    }
    assert select_default(results) == "y"  # x wins big on a but loses on b
    assert "| y | 0.720 (+0.020) | 0.620 (+0.020) |" in ablation_table(results)


def test_embedding_cache_keeps_backends_apart(tmp_path):
    """OpenVINO's bfloat16 embeddings are close to onnxruntime's, not identical: never served for them."""

    class Backend(HashEncoder):
        def __init__(self, backend: str):
            super().__init__(dim=16)
            self.fingerprint, self.backend = "same-weights", backend

    texts = ["send an email", "get the weather"]
    paths = {
        b: CachedEncoder(Backend(b), root=tmp_path)._path("tools", texts)
        for b in ("onnxruntime", "", "openvino")
    }
    assert paths["onnxruntime"] == paths[""]  # onnxruntime keeps the cache keys it always had
    assert paths["openvino"] != paths["onnxruntime"]


def test_embedding_cache_survives_concurrent_writers(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"tool {i}" for i in range(20)]

    def work(_: int) -> None:
        enc = CachedEncoder(HashEncoder(dim=16), root=tmp_path)
        for _ in range(30):
            (tmp_path / enc._path("tools", texts).name).unlink(missing_ok=True)
            assert enc.encode_tools(texts).shape == (20, 16)

    with ThreadPoolExecutor(4) as pool:  # map re-raises a worker's exception here
        list(pool.map(work, range(4)))
    assert all(p.suffix == ".npy" and not p.name.startswith(".") for p in tmp_path.iterdir())
