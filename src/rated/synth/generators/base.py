"""The generator seam: anything that turns chat prompts into synthetic queries, one tool at a time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rated.synth.records import Generation

__all__ = ["Generator", "Job"]


@dataclass(frozen=True)
class Job:
    """One request: the chat ``messages`` that ask for queries about tool ``tool_id``."""

    tool_id: str
    messages: tuple[dict[str, str], ...]


@runtime_checkable
class Generator(Protocol):
    """Yields one ``Generation`` per job, in completion order (not necessarily job order).

    A failed job yields a ``Generation`` with ``error`` set; a failure that dooms every job (a wrong key, an
    unknown model) raises ``ConfigError`` instead, so the caller stops early and keeps what is done.
    """

    name: str
    model: str

    def generate(self, jobs: Sequence[Job]) -> Iterator[Generation]: ...
