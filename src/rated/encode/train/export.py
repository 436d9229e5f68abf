"""Save a fine-tuned model: checkpoint, ONNX model folder checked against torch, and the model card.

The checkpoint (safetensors, tokenizer, config) becomes a model folder with the ONNX graph through
``rated.encode.prepare.export_model_dir``; the ONNX and torch embeddings of sample texts must agree
(cosine >= ``MIN_AGREEMENT``). ``training.json`` and ``README.md`` record the data, settings and metrics.
"""

from __future__ import annotations

import json
import platform
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from rated.encode.train.config import TrainConfig, TrainResult
from rated.errors import ModelError

__all__ = ["MIN_AGREEMENT", "save_model"]

MIN_AGREEMENT = 0.999


def save_model(
    model: Any,
    base: Path,
    result: TrainResult,
    cfg: TrainConfig,
    data: dict[str, Any],
    texts: list[str],
    val: list[tuple[str, set[int]]],
    export_onnx: bool,
    device: str,
) -> None:
    """Write ``result.out_dir``: the ONNX model folder (or the bare checkpoint) plus the model card.

    Raises ``ModelError`` after writing when the ONNX graph disagrees with the torch model.
    """
    out = result.out_dir
    out.parent.mkdir(parents=True, exist_ok=True)
    ckpt = out.with_name(f".{out.name}.checkpoint")
    shutil.rmtree(ckpt, ignore_errors=True)
    model.save(str(ckpt), create_model_card=False, safe_serialization=True)
    (ckpt / "README.md").unlink(missing_ok=True)  # our card is written after the export
    _add_legacy_pooling_keys(ckpt)
    try:
        if export_onnx:
            from rated.encode.onnx import OnnxEncoder
            from rated.encode.prepare import export_model_dir

            export_model_dir(ckpt, out, name=out.name)
            sample = [q for q, _ in val[:48]] + texts[:16]
            onnx_vecs = OnnxEncoder.load(out).encode_queries(sample)
            torch_vecs = model.encode(sample, convert_to_numpy=True, normalize_embeddings=True)
            result.onnx_min_cosine = float(np.min(np.sum(onnx_vecs * torch_vecs, axis=1)))
        else:
            shutil.rmtree(out, ignore_errors=True)
            ckpt.rename(out)
    finally:
        shutil.rmtree(ckpt, ignore_errors=True)
    _write_card(out, base, result, cfg, data, device)
    if result.onnx_min_cosine is not None and result.onnx_min_cosine < MIN_AGREEMENT:
        raise ModelError(
            f"{out}: the ONNX export disagrees with the torch model (min cosine {result.onnx_min_cosine:.5f} "
            f"< {MIN_AGREEMENT}); do not serve it"
        )


def _add_legacy_pooling_keys(ckpt: Path) -> None:
    """Write the ``pooling_mode_*`` flags beside sentence-transformers 6's ``pooling_mode``.

    Older sentence-transformers releases and the ONNX exporter's pipeline check read only the flags; newer
    releases ignore them when ``pooling_mode`` is present, so the folder loads everywhere.
    """
    for path in ckpt.glob("*_Pooling/config.json"):
        cfg = json.loads(path.read_text(encoding="utf-8"))
        if cfg.get("pooling_mode") == "mean" and not any(k.startswith("pooling_mode_") for k in cfg):
            cfg["pooling_mode_mean_tokens"] = True
            path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")


def _versions() -> dict[str, str]:
    import sentence_transformers
    import torch

    from rated import __version__

    return {
        "rated": __version__,
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "python": platform.python_version(),
    }


def _write_card(
    out: Path, base: Path, res: TrainResult, cfg: TrainConfig, data: dict[str, Any], device: str
) -> None:
    info = {
        "base_model": str(base),
        "device": device,
        "config": asdict(cfg),
        "data": data,
        "versions": _versions(),
        "result": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(res).items()},
    }
    (out / "training.json").write_text(json.dumps(info, indent=2, default=str) + "\n", encoding="utf-8")
    fmt = lambda x: "n/a" if x is None else f"{x:.4f}"  # noqa: E731
    lines = [
        f"# {out.name}: all-MiniLM-L6-v2 fine-tuned for tool retrieval by `rated train`",
        "",
        f"Base model: `{base.name}` (`{base}`). Device: {device}. Steps: {res.steps} "
        f"({res.seconds:.0f} s){', stopped early' if res.stopped_early else ''}; best step {res.best_step}.",
        "",
        "## Data seen",
        "",
        *[f"- {k}: {v}" for k, v in data.items()],
        f"- training rows (query, positive, {cfg.hard_negatives + cfg.random_negatives} negative column(s)): "
        f"{res.n_train_rows}",
        f"- validation queries (ranked against the whole pool): {res.n_val_queries}",
        "",
        "## Hyper-parameters",
        "",
        "InfoNCE (sentence-transformers MultipleNegativesRankingLoss) over in-batch and hard negatives; "
        "batches never hold a document from another row's duplicate group.",
        "",
        *[f"- {k}: {v}" for k, v in asdict(cfg).items()],
        "",
        "Deviations from the paper: batch 64 and lr 2e-5 instead of 8 and 1e-5 (better in our measurements), "
        "warm-up as 10% of the steps instead of 1,000 steps, all-MiniLM-L6-v2 instead of DRAGON.",
        "",
        "## Metrics",
        "",
        f"- validation MRR: base {fmt(res.base_val_mrr)} -> fine-tuned {fmt(res.best_val_mrr)}",
        f"- ONNX vs torch agreement (min cosine over sample texts): {fmt(res.onnx_min_cosine)}",
        "",
        "| step | val MRR |",
        "|---|---|",
        *[f"| {h['step']} | {h['val_mrr']:.4f} |" for h in res.history],
        "",
    ]
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")
