"""KeyedRows: per-key state rows allocated on first use, pristine again when dropped and reused."""

from __future__ import annotations

import numpy as np

from rated.policy._rows import KeyedRows

PRISTINE = [0.0, -np.inf, 1.0]


def test_unknown_keys_read_the_pristine_row_and_allocate_nothing() -> None:
    rows = KeyedRows(PRISTINE)
    assert rows.index.get("a", 0) == 0 and rows.scalars[0] == PRISTINE
    r = rows.row("a")
    assert r > 0 and rows.row("a") == r and rows.scalars[r] == PRISTINE and rows.index == {"a": r}


def test_written_values_are_plain_floats_and_row_zero_stays_pristine() -> None:
    rows = KeyedRows(PRISTINE)
    r = rows.row("a")
    rows.write(r, [np.float32(1.5), 2, np.float64(-3.0)])
    assert rows.scalars[r] == [1.5, 2.0, -3.0] and all(type(v) is float for v in rows.scalars[r])
    assert rows.scalars[0] == PRISTINE


def test_a_dropped_row_is_reused_pristine_vector_included() -> None:
    rows = KeyedRows(PRISTINE)
    rows.set_vector_width(np.array([0.0, 0.5]))
    a = rows.row("a")
    rows.write(a, [9.0, 9.0, 9.0])
    rows.vectors[a] = [7.0, 7.0]
    rows.drop("a")
    assert "a" not in rows.index
    b = rows.row("b")
    assert b == a and rows.scalars[b] == PRISTINE and rows.vectors[b].tolist() == [0.0, 0.5]


def test_the_vector_table_grows_with_the_rows_and_keeps_them() -> None:
    rows = KeyedRows(PRISTINE)
    rows.set_vector_width(np.array([1.0]))
    keys = [f"k{i}" for i in range(40)]
    for i, key in enumerate(keys):
        r = rows.row(key)  # may grow the table: index it after
        rows.vectors[r] = [float(i)]
    assert len(rows.vectors) >= len(rows.scalars) == 41
    assert [float(rows.vectors[rows.index[k]][0]) for k in keys] == [float(i) for i in range(40)]
    assert float(rows.vectors[0][0]) == 1.0  # unknown keys: pristine
