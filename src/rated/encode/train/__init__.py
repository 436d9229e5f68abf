"""Contrastive fine-tuning of the dual encoder on (query, tool) pairs, exported to the serving ONNX format.

``data`` builds training rows and batches (no torch), ``loop`` trains (the ``train`` extra), ``export``
saves the checkpoint, the ONNX model folder and the model card; ``config`` holds the settings and result.
The paper's one epoch and temperature are kept; batch 64 and lr 2e-5 replace its batch 8 and lr 1e-5
(measured better here, paper-notes section 5), and warm-up is 10% of the steps (its 1,000 steps exceed a
small run).
"""

from rated.encode.train.config import TrainConfig, TrainResult
from rated.encode.train.data import TrainRow, make_batches, rows_from_dataset, rows_from_pairs
from rated.encode.train.export import MIN_AGREEMENT
from rated.encode.train.loop import train

__all__ = [
    "MIN_AGREEMENT",
    "TrainConfig",
    "TrainResult",
    "TrainRow",
    "make_batches",
    "rows_from_dataset",
    "rows_from_pairs",
    "train",
]
