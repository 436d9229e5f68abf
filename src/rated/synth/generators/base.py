"""The generator seam: anything that turns chat prompts into synthetic queries, one tool at a time.

Both generators receive an OpenAI-style chat completion (an endpoint's JSON, or llama-cpp-python's dict of
the same shape); :func:`completion_text` reads its text and :func:`answered` / :func:`failed` make the
``Generation`` for a job, so a query parsed one way by one generator is parsed the same by the other.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from rated.synth.prompt import parse_queries
from rated.synth.records import Generation

__all__ = ["Generator", "Job", "answered", "completion_text", "failed"]


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


def completion_text(completion: Mapping[str, Any]) -> str:
    """The answer text of a chat completion; raises KeyError, IndexError or TypeError when malformed."""
    return completion["choices"][0]["message"]["content"] or ""


def answered(job: Job, text: str, started: float, **meta: Any) -> Generation:
    """The ``Generation`` for a job answered with ``text``: its parsed queries, the raw text and ``meta``."""
    return Generation(
        tool_id=job.tool_id,
        queries=tuple(parse_queries(text)),
        raw=text,
        seconds=time.perf_counter() - started,
        meta=meta,
    )


def failed(job: Job, error: str, started: float) -> Generation:
    """The ``Generation`` for a job that got no usable answer (``started`` is a ``perf_counter`` time)."""
    return Generation(job.tool_id, error=error, seconds=time.perf_counter() - started)
