"""Cached index parts as numpy ``.npz`` archives: a JSON header beside plain arrays, no pickle and nothing
to inflate. A blob read back from a store is a cache any process may have written (or damaged): it is
opened only when every member is stored as ``np.savez`` writes it, and the caller checks what it reads."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np

__all__ = ["from_json", "json_array", "open_npz", "pack"]


def pack(**arrays: np.ndarray) -> bytes:
    """``arrays`` as one ``.npz`` blob (members stored, not compressed)."""
    buffer = io.BytesIO()
    # mypy matches **arrays against savez's own keyword allow_pickle too (no caller names an array so)
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def open_npz(blob: bytes) -> np.lib.npyio.NpzFile:
    """The arrays of a blob ``pack`` made (lazily read; use as a context manager); ``ValueError`` when a
    member is compressed or claims to be larger than the blob (a zip bomb is never inflated)."""
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        if any(m.compress_type != zipfile.ZIP_STORED or m.file_size > len(blob) for m in archive.infolist()):
            raise ValueError("not an archive of stored arrays")
    return np.load(io.BytesIO(blob), allow_pickle=False)


def json_array(value: Any) -> np.ndarray:
    """``value`` as JSON text in a uint8 array (a header member)."""
    return np.frombuffer(json.dumps(value).encode("utf-8"), dtype=np.uint8)


def from_json(array: np.ndarray) -> Any:
    return json.loads(np.asarray(array, dtype=np.uint8).tobytes().decode("utf-8"))
