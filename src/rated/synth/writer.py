"""A resumable, append-only log of generator answers (one JSON line per tool).

Generation is the slow, paid part of the pipeline, so every answer is appended and flushed as soon as it
arrives; a rerun reads the log and skips the tools already done. Only successful answers are logged, so a
tool whose request failed is tried again next time. A line cut short by a crash is ignored on reading.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO

from rated.synth.records import Generation

__all__ = ["GenerationLog"]


class GenerationLog:
    """JSONL log at ``path``; ``done`` holds the tool ids already generated (read once on open)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._entries: dict[str, Generation] = {}
        self._fh: IO[str] | None = None
        if self.path.is_file():
            self._read()

    def _read(self) -> None:
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    obj = json.loads(line)
                    gen = Generation(
                        tool_id=str(obj["tool_id"]),
                        queries=tuple(str(q) for q in obj.get("queries", ())),
                        raw=str(obj.get("raw", "")),
                        seconds=float(obj.get("seconds", 0.0)),
                        meta=dict(obj.get("meta") or {}),
                    )
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue  # a torn last line from an interrupted run
                self._entries[gen.tool_id] = gen

    @property
    def done(self) -> set[str]:
        return set(self._entries)

    def get(self, tool_id: str) -> Generation | None:
        return self._entries.get(tool_id)

    def append(self, gen: Generation) -> None:
        """Log a successful answer durably; failed answers are not logged (so they are retried)."""
        if not gen.ok:
            return
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")
        obj = {
            "tool_id": gen.tool_id,
            "queries": list(gen.queries),
            "raw": gen.raw,
            "seconds": round(gen.seconds, 3),
        }
        if gen.meta:
            obj["meta"] = gen.meta
        self._fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._entries[gen.tool_id] = gen

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> GenerationLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
