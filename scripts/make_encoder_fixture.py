"""Write tests/fixtures/minilm_reference.npz: sentence-transformers embeddings the ONNX encoder must match.

Needs the train extra (torch + sentence-transformers). The model is loaded from the folder that
``rated.encode.prepare.prepare_minilm`` extracted from the pinned wheel, never from a model hub.

    .venv/bin/python scripts/make_encoder_fixture.py [--out tests/fixtures/minilm_reference.npz]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

TEXTS = [
    "",
    "weather",
    "Send an email to a contact with a subject and body.",
    "What's the weather going to be like in Paris tomorrow afternoon?",
    "get_stock_price: Returns the latest trading price for a ticker symbol on NASDAQ or NYSE.",
    "Übersetze diesen Satz ins Französische, bitte — schnell!",
    "東京の天気を教えてください",
    "Найти ближайший ресторан с вегетарианским меню",
    "emoji test 🚀🔥 launch the rocket API 🙂",
    "translate(text: str, target_lang: str) -> str  # POST /v2/translate?auth_key=...",
    "   leading and trailing whitespace\tand\ttabs\n\nnewlines   ",
    # longer than 256 word pieces: must be truncated exactly as sentence-transformers does
    " ".join(
        f"step {i}: call the inventory service to reserve item SKU-{i:05d}, then confirm the order status"
        for i in range(40)
    ),
    "CRM tool: create, update, search and delete leads, contacts, deals and companies; supports "
    "pagination, filtering by custom fields, and webhooks for change notifications.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("tests/fixtures/minilm_reference.npz"))
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model folder is local; never reach a hub
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    from rated.encode.prepare import prepare_minilm

    model_dir = prepare_minilm(progress=True)
    model = SentenceTransformer(str(model_dir), device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    emb = model.encode(TEXTS, batch_size=4, convert_to_numpy=True, normalize_embeddings=True)
    tokens = [len(model.tokenizer(t)["input_ids"]) for t in TEXTS]
    assert max(tokens) > 256, "the fixture must hold a text longer than the truncation limit"
    manifest = json.loads((model_dir / "manifest.json").read_text())
    meta = {
        "model": manifest["name"],
        "source": manifest["source"],
        "safetensors_sha256": manifest["files"]["model.safetensors"]["sha256"],
        "sentence_transformers": sentence_transformers.__version__,
        "untruncated_token_counts": tokens,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        args.out, texts=np.array(TEXTS), embeddings=emb.astype(np.float32), meta=np.array(json.dumps(meta))
    )
    print(f"wrote {args.out}: {len(TEXTS)} texts, dim {emb.shape[1]}, token counts {tokens}")


if __name__ == "__main__":
    main()
