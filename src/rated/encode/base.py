"""The encoder seam: anything that turns texts into L2-normalised float32 vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Encoder"]


@runtime_checkable
class Encoder(Protocol):
    """A dual encoder. Queries and tools have separate entry points so asymmetric models fit too.

    Both methods return a ``(len(texts), dim)`` float32 array of unit-norm rows, never another type.
    """

    name: str
    dim: int

    def encode_queries(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False
    ) -> np.ndarray: ...

    def encode_tools(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False
    ) -> np.ndarray: ...
