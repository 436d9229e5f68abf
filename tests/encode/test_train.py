"""Fine-tuning: batches, rows from pairs, and (with torch) a tiny end-to-end run with the ONNX export."""

from __future__ import annotations

import builtins
import json
import random

import numpy as np
import pytest

from rated.catalog.schema import Tool
from rated.encode.train import TrainConfig, TrainRow, make_batches, rows_from_pairs
from rated.errors import DataError
from rated.synth.records import SynthQuery

TOPICS = {
    "weather": "weather forecast rain sun temperature city tomorrow",
    "email": "send email message inbox recipient subject mail",
    "stocks": "stock price market ticker shares trading",
    "music": "play music song playlist artist album",
    "maps": "map directions route driving distance address",
    "recipes": "recipe cooking ingredients dinner meal kitchen",
    "flights": "flight airline airport ticket booking travel",
    "news": "news headlines articles breaking stories today",
}


# words users say, disjoint from the descriptions: only training can link them to the tools
QUERY_WORDS = {
    "weather": "umbrella drizzle chilly humid storm",
    "email": "write boss colleague reply note",
    "stocks": "invest nasdaq portfolio dividend earnings",
    "music": "listen tune jazz concert beats",
    "maps": "navigate highway lost nearest walk",
    "recipes": "bake soup vegan lasagna oven",
    "flights": "fly paris layover boarding seat",
    "news": "happening world politics latest report",
}


def _tools():
    tools = [Tool(id=k, name=k, description=v) for k, v in TOPICS.items()]
    tools.append(
        Tool(id="email-n8n", name="gmail", description="email via gmail send message", group="email")
    )
    return tools


def _row(q, pos, negs, banned, docs):
    return TrainRow(q, pos, tuple(negs), frozenset(banned), frozenset(docs))


def test_batches_never_mix_a_row_with_its_banned_groups():
    rng = random.Random(0)
    groups = [f"g{i}" for i in range(10)]
    rows = []
    for i in range(200):
        pos = rng.choice(groups)
        neg = rng.choice([g for g in groups if g != pos])
        rows.append(_row(f"q{i}", pos, [neg], {pos}, {pos, neg}))
    batches = make_batches(rows, 4, random.Random(1))
    assert sorted(i for b in batches for i in b) == list(range(200))  # every row once
    for batch in batches:
        for i in batch:
            others = {g for j in batch if j != i for g in rows[j].doc_groups}
            assert not rows[i].banned & others
    assert max(len(b) for b in batches) == 4


def test_batches_shrink_when_the_pool_has_few_groups():
    rows = [
        _row(f"q{i}", "a" if i % 2 else "b", [], {"a" if i % 2 else "b"}, {"a" if i % 2 else "b"})
        for i in range(6)
    ]
    batches = make_batches(rows, 64, random.Random(0))
    assert all(len(b) <= 2 for b in batches) and sum(map(len, batches)) == 6


def test_rows_from_pairs_take_hard_negatives_and_fill_the_rest():
    tools = _tools()
    recs = [
        SynthQuery(
            "1", "mail my boss", "email", "email", hard_negatives=("email-n8n", "news"), random_negatives=()
        ),
        SynthQuery("2", "rain tomorrow?", "weather", "weather", hard_negatives=()),
        SynthQuery("3", "held out", "weather", "weather", split="val"),
    ]
    rows = rows_from_pairs(recs, tools, TrainConfig(hard_negatives=1, random_negatives=1, seed=0))
    assert [r.query for r in rows] == ["mail my boss", "rain tomorrow?"]
    # the duplicate listing "email-n8n" is dropped as a negative; "news" is kept; one more drawn at random
    assert rows[0].negatives[0] == "news" and len(rows[0].negatives) == 2
    assert all(len(r.negatives) == 2 for r in rows)
    assert not {"email", "email-n8n"} & set(rows[0].negatives)
    assert rows[0].banned == {"email"} and "email" in rows[0].doc_groups


def test_rows_from_pairs_reject_unknown_tools():
    with pytest.raises(DataError, match="not in the catalog"):
        rows_from_pairs([SynthQuery("1", "q", "nope", "nope")], _tools(), TrainConfig())


def test_missing_train_extra_names_it(monkeypatch, tmp_path):
    from rated.encode import train as train_mod

    real_import = builtins.__import__

    def fake_import(name, *args, **kw):
        if name in ("torch", "sentence_transformers"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    row = _row("q", "email", ["news"], {"email"}, {"email", "news"})
    with pytest.raises(ImportError, match=r"rated\[train\]"):
        train_mod.train([row], _tools(), tmp_path / "m")


# --- end to end with a tiny random BERT (needs the train extra) -------------------------------------------


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny")
    hf = root / "hf"
    hf.mkdir()
    corpus = [f"{k} {v} {QUERY_WORDS[k]}" for k, v in TOPICS.items()] + ["please schedule a meeting calendar"]
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(corpus, vocab_size=300, min_frequency=1)
    BertTokenizerFast(tokenizer_object=wp._tokenizer).save_pretrained(str(hf))
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=wp.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(cfg).save_pretrained(str(hf), safe_serialization=True)
    base = root / "base"
    st = SentenceTransformer(
        modules=[Transformer(str(hf), max_seq_length=32), Pooling(32, "mean"), Normalize()]
    )
    st.save(str(base))
    return base


def _queries(n_per_tool, seed):
    rng = random.Random(seed)
    out = []
    for k in TOPICS:
        words = QUERY_WORDS[k].split()
        for i in range(n_per_tool):
            out.append((" ".join(rng.sample(words, 3)) + " please", k, i))
    return out


@pytest.mark.train
def test_tiny_end_to_end_learns_exports_and_agrees(tiny_base, tmp_path):
    from rated.encode.onnx import OnnxEncoder
    from rated.encode.train import TrainConfig, train

    tools = [Tool(id=k, name=k, description=v) for k, v in TOPICS.items()]
    recs = [SynthQuery(f"{k}#{i}", q, k, k) for q, k, i in _queries(12, 0)]
    cfg = TrainConfig(batch_size=8, lr=3e-3, epochs=2, eval_every=6, patience=3, max_seq_length=32, seed=0)
    rows = rows_from_pairs(recs, tools, cfg)
    val = [(q, [k]) for q, k, _ in _queries(3, 1)]
    out = tmp_path / "models" / "tiny-ft"
    res = train(
        rows, tools, out, val_queries=val, base_model=tiny_base, config=cfg, data_info={"pairs": "toy"}
    )
    assert 0 < res.steps <= 3 * 96 and res.n_train_rows == 96 and res.n_val_queries == 24
    assert res.best_val_mrr > res.base_val_mrr + 0.1  # it learned the toy task
    assert res.onnx_min_cosine >= 0.999
    for name in (
        "model.safetensors",
        "tokenizer.json",
        "config.json",
        "model.onnx",
        "manifest.json",
        "README.md",
    ):
        assert (out / name).is_file(), name
    card = (out / "README.md").read_text()
    assert "pairs: toy" in card and "temperature: 0.05" in card and "validation MRR" in card
    info = json.loads((out / "training.json").read_text())
    assert info["result"]["best_step"] == res.best_step and info["config"]["batch_size"] == 8
    enc = OnnxEncoder.load(out)
    vecs = enc.encode_queries(["rain tomorrow please", "send mail please"])
    assert vecs.shape == (2, 32) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert not list(out.parent.glob(".tiny-ft*"))  # no checkpoint left behind


@pytest.mark.train
def test_early_stopping_keeps_the_best_weights(tiny_base, tmp_path):
    from rated.encode.train import TrainConfig, train

    tools = [Tool(id=k, name=k, description=v) for k, v in TOPICS.items()]
    recs = [SynthQuery(f"{k}#{i}", q, k, k) for q, k, i in _queries(4, 0)]
    # a huge learning rate ruins the model: validation never beats the base, so the base weights are kept
    cfg = TrainConfig(batch_size=8, lr=5.0, epochs=5, eval_every=1, patience=2, max_seq_length=32)
    val = [(q, [k]) for q, k, _ in _queries(2, 1)]
    res = train(
        rows_from_pairs(recs, tools, cfg),
        tools,
        tmp_path / "m",
        val_queries=val,
        base_model=tiny_base,
        config=cfg,
        export_onnx=False,
    )
    assert res.stopped_early and res.steps < 5 * 4
    assert res.best_val_mrr >= res.base_val_mrr
    assert (tmp_path / "m" / "model.safetensors").is_file() and not (tmp_path / "m" / "model.onnx").exists()


@pytest.mark.train
def test_train_cli_with_pairs_and_a_real_dataset(tiny_base, tmp_path, capsys):
    from rated.bench.dataset import Dataset, Query, save_dataset
    from rated.catalog.loaders import save_catalog
    from rated.cli import main
    from rated.synth.records import write_pairs

    tools = [Tool(id=k, name=k, description=v) for k, v in TOPICS.items()]
    recs = [SynthQuery(f"{k}#{i}", q, k, k, split="val" if i == 0 else "train") for q, k, i in _queries(4, 0)]
    write_pairs(recs, tmp_path / "syn.jsonl")
    save_catalog(tools, tmp_path / "syn.tools.jsonl")
    extra_tool = Tool(id="calendar", name="calendar", description="calendar event meeting schedule")
    real = [Query(f"r{i}", f"schedule a meeting {i}", ("calendar",), "train") for i in range(3)]
    real.append(Query("r-test", "never trained on", ("calendar",), "test"))
    save_dataset(Dataset("toy", [*tools, extra_tool], real), tmp_path / "toy")
    out = tmp_path / "model"
    argv = [
        "train",
        "--pairs",
        str(tmp_path / "syn.jsonl"),
        "--also",
        str(tmp_path / "toy"),
        "--out",
        str(out),
        "--base",
        str(tiny_base),
        "--batch-size",
        "4",
        "--max-seq-length",
        "32",
        "--max-steps",
        "3",
        "--patience",
        "10",
        "--json",
    ]
    assert main(argv) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["rows"] == 8 * 3 + 3 and res["val_queries"] == 8 and res["steps"] == 3
    assert res["onnx_min_cosine"] >= 0.999
    card = (out / "README.md").read_text()
    assert "synthetic pairs" in card and "real queries (toy)" in card and "test queries never used" in card


def test_train_cli_needs_data(tmp_path, capsys):
    from rated.cli import main

    assert main(["train", "--out", str(tmp_path / "m")]) == 2
    assert "nothing to train on" in capsys.readouterr().err
