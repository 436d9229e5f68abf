"""The settings of a fine-tuning run and what it reports back (hand-off types, no torch)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TrainConfig", "TrainResult"]


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters; each deviation from the paper is noted."""

    epochs: int = 1
    batch_size: int = 64  # paper: 8
    lr: float = 2e-5  # paper: 1e-5
    warmup_ratio: float = 0.1  # paper: 1,000 steps
    weight_decay: float = 0.01
    temperature: float = 0.05
    max_seq_length: int = 256
    hard_negatives: int = 1  # negative columns per row, taken from the pairs' mined hard negatives
    random_negatives: int = 0  # extra negative columns from the pairs' random negatives
    eval_every: int = 0  # steps between validations; 0 = four times per epoch
    patience: int = 2
    max_steps: int = 0  # 0 = no limit
    max_val_queries: int = 2000
    seed: int = 0
    device: str | None = None  # None = cuda when available
    amp: bool | None = None  # None = fp16 autocast on cuda only


@dataclass
class TrainResult:
    out_dir: Path
    steps: int
    seconds: float
    base_val_mrr: float | None
    best_val_mrr: float | None
    best_step: int
    history: list[dict[str, float]] = field(default_factory=list)
    onnx_min_cosine: float | None = None
    n_train_rows: int = 0
    n_val_queries: int = 0
    stopped_early: bool = False
