"""``rated.encode.train`` is a package (config, data, loop, export): the old imports work, without torch."""

from __future__ import annotations

import subprocess
import sys


def test_old_import_paths_still_work() -> None:
    from rated.encode import train as train_mod
    from rated.encode.train import (
        MIN_AGREEMENT,
        TrainConfig,
        TrainResult,
        TrainRow,
        make_batches,
        rows_from_dataset,
        rows_from_pairs,
        train,
    )
    from rated.encode.train.data import rows_from_pairs as data_rows
    from rated.encode.train.loop import train as loop_train

    assert train_mod.train is train is loop_train and rows_from_pairs is data_rows
    assert MIN_AGREEMENT == 0.999 and TrainConfig().batch_size == 64
    assert {TrainResult, TrainRow, make_batches, rows_from_dataset} <= {
        getattr(train_mod, n) for n in train_mod.__all__
    }


def test_importing_the_package_does_not_import_torch() -> None:
    code = "import sys, rated.encode.train\n"
    code += "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
