"""The contrastive training loop, with validation MRR, early stopping and the best weights kept.

The loss is sentence-transformers' ``MultipleNegativesRankingLoss`` (InfoNCE over in-batch negatives plus
the mined hard negatives, temperature 0.05 = scale 20). Training evaluates MRR on a validation split before
the first step and every ``eval_every`` steps, keeps the best weights and stops after ``patience``
evaluations without gain; the result is written by ``rated.encode.train.export.save_model``.

torch and sentence-transformers come with the ``train`` extra and are imported only when training starts.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rated.catalog.schema import Tool
from rated.catalog.text import tool_text
from rated.encode.train.config import TrainConfig, TrainResult
from rated.encode.train.data import TrainRow, make_batches
from rated.encode.train.export import save_model
from rated.errors import ConfigError, DataError, ModelError
from rated.extras import install_hint

__all__ = ["train"]


def _require_train() -> tuple[Any, Any]:
    try:
        import sentence_transformers
        import torch
    except ImportError as exc:
        raise ImportError(
            f"fine-tuning needs torch and sentence-transformers: {install_hint('train')} [{exc}]"
        ) from None
    return torch, sentence_transformers


def _mrr(
    encode: Callable[[list[str]], np.ndarray], queries: list[tuple[str, set[int]]], tool_vecs: np.ndarray
) -> float:
    if not queries:
        return float("nan")
    qv = encode([q for q, _ in queries])
    scores = qv @ tool_vecs.T
    total = 0.0
    for row, (_, rel) in enumerate(queries):
        rel_idx = np.fromiter(rel, dtype=np.int64)
        best = scores[row, rel_idx].max()
        total += 1.0 / (1 + int((scores[row] > best).sum()))
    return total / len(queries)


def _seed_all(torch: Any, seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _load_model(st: Any, base: Path, max_len: int, device: str) -> Any:
    if not (base / "model.safetensors").is_file():
        raise ModelError(f"{base}: no model.safetensors (expected a prepared model folder)")
    model = st.SentenceTransformer(str(base), device=device, local_files_only=True)
    model.max_seq_length = max_len
    return model


def _preprocess(model: Any, texts: list[str]) -> dict[str, Any]:
    fn = getattr(model, "preprocess", None) or model.tokenize  # ``tokenize`` before sentence-transformers 6
    return fn(texts)


def _to_device(features: dict[str, Any], device: str) -> dict[str, Any]:
    return {k: v.to(device) if hasattr(v, "to") else v for k, v in features.items()}


def _pool_text(tools: Sequence[Tool]) -> tuple[list[str], dict[str, int]]:
    return [tool_text(t) for t in tools], {t.id: i for i, t in enumerate(tools)}


def _validation_set(
    val_queries: Sequence[tuple[str, Sequence[str]]], index: dict[str, int], cfg: TrainConfig
) -> list[tuple[str, set[int]]]:
    """Validation queries as (text, positions of their relevant tools in the pool), sampled down if many."""
    val = [(q, {index[r] for r in rel if r in index}) for q, rel in val_queries]
    val = [v for v in val if v[1]]
    if len(val) > cfg.max_val_queries:
        val = random.Random(cfg.seed).sample(val, cfg.max_val_queries)
    return val


def _batch_columns(sel: Sequence[TrainRow], texts: list[str], index: dict[str, int]) -> list[list[str]]:
    """The loss's input columns: queries, positives, then one column per negative."""
    columns = [[r.query for r in sel], [texts[index[r.positive]] for r in sel]]
    for j in range(len(sel[0].negatives)):
        columns.append([texts[index[r.negatives[j]]] for r in sel])
    return columns


def _progress_bar(enabled: bool) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    cols = (
        TextColumn("training"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeRemainingColumn(),
    )
    return Progress(*cols, disable=not enabled, transient=True)


def train(
    rows: Sequence[TrainRow],
    tools: Sequence[Tool],
    out_dir: str | Path,
    *,
    val_queries: Sequence[tuple[str, Sequence[str]]] = (),
    base_model: str | Path | None = None,
    config: TrainConfig | None = None,
    data_info: dict[str, Any] | None = None,
    export_onnx: bool = True,
    progress: bool = False,
) -> TrainResult:
    """Fine-tune ``base_model`` (default: the prepared all-MiniLM-L6-v2) on ``rows``; write ``out_dir``.

    ``val_queries`` are ``(text, relevant tool ids)`` pairs, ranked against all ``tools`` for early stopping.
    ``data_info`` is copied into the model card (what data the model saw).
    """
    cfg = config or TrainConfig()
    if not rows:
        raise DataError("no training rows (is the pairs file's train split empty?)")
    if cfg.batch_size < 2 or cfg.epochs < 1 or cfg.lr <= 0 or cfg.temperature <= 0:
        raise ConfigError("batch_size must be >= 2, epochs >= 1, lr > 0 and temperature > 0")
    torch, st = _require_train()
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from transformers import get_linear_schedule_with_warmup

    if base_model is None:
        from rated.encode.prepare import prepare_minilm

        base_model = prepare_minilm(progress=progress)
    base_model = Path(base_model)
    device = cfg.device or ("cuda" if torch.cuda.is_available() else "cpu")
    amp = cfg.amp if cfg.amp is not None else device.startswith("cuda")
    _seed_all(torch, cfg.seed)
    model = _load_model(st, base_model, cfg.max_seq_length, device)
    loss_fn = MultipleNegativesRankingLoss(model, scale=1.0 / cfg.temperature)

    texts, index = _pool_text(tools)
    val = _validation_set(val_queries, index, cfg)

    def encode(batch: list[str]) -> np.ndarray:
        return model.encode(batch, batch_size=128, convert_to_numpy=True, normalize_embeddings=True)

    def evaluate() -> float | None:
        if not val:
            return None
        model.eval()
        with torch.no_grad():
            return _mrr(encode, val, encode(texts))

    rng = random.Random(cfg.seed)
    epochs = [make_batches(rows, cfg.batch_size, rng) for _ in range(cfg.epochs)]
    total = sum(len(b) for b in epochs)
    if cfg.max_steps:
        total = min(total, cfg.max_steps)
    eval_every = cfg.eval_every or max(1, len(epochs[0]) // 4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(cfg.warmup_ratio * total), total)
    scaler = torch.amp.GradScaler("cuda", enabled=amp)

    start = time.perf_counter()
    base_mrr = evaluate()
    best, best_step, best_state, bad, step = base_mrr, 0, None, 0, 0
    history: list[dict[str, float]] = [] if base_mrr is None else [{"step": 0, "val_mrr": base_mrr}]
    stopped = False
    with _progress_bar(progress) as bar:
        task = bar.add_task("train", total=total, info="")
        for batches in epochs:
            for batch in batches:
                if step >= total or stopped:
                    break
                model.train()
                columns = _batch_columns([rows[i] for i in batch], texts, index)
                features = [_to_device(_preprocess(model, c), device) for c in columns]
                with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=amp):
                    loss = loss_fn(features, None)
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                step += 1
                bar.update(task, advance=1, info=f"loss {loss.item():.3f}")
                if step % eval_every == 0 or step == total:
                    mrr = evaluate()
                    if mrr is None:
                        continue
                    history.append({"step": step, "val_mrr": mrr, "loss": float(loss.item())})
                    if best is None or mrr > best:
                        best, best_step, bad = mrr, step, 0
                        best_state = copy.deepcopy(model.state_dict())
                    else:
                        bad += 1
                        stopped = bad >= cfg.patience
    if val and best_state is None:
        best_step = 0  # never beat the base model: keep the base weights
        model = _load_model(st, base_model, cfg.max_seq_length, device)
    elif best_state is not None:
        model.load_state_dict(best_state)
    seconds = time.perf_counter() - start
    result = TrainResult(
        out_dir=Path(out_dir),
        steps=step,
        seconds=seconds,
        base_val_mrr=base_mrr,
        best_val_mrr=best,
        best_step=best_step if val else step,
        history=history,
        n_train_rows=len(rows),
        n_val_queries=len(val),
        stopped_early=stopped,
    )
    save_model(model, base_model, result, cfg, data_info or {}, texts, val, export_onnx, device)
    return result
