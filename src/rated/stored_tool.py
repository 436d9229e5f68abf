"""A tool of a retriever's pool as its store holds it: parsed into its ``Tool`` only when first needed.

Validating a stored record with pydantic costs about 50 us; a process opening a 50,000-tool index would
spend seconds on it before its first answer, though a search reads only ids (the lexical index comes from
its snapshot, the dense one from the stored embeddings) and returns a handful of tools. A ``StoredTool``
holds the id and the digest of its record at once and validates the record (``parse_record``) the first
time its ``Tool`` is read, then keeps the ``Tool`` and drops the text. A damaged record raises
``IndexFormatError`` naming the tool at that moment, each time it is read; the other tools are unaffected.

>>> entry = StoredTool("w", '{"id": "w", "name": "getWeather"}', "demo.db")
>>> entry.id, entry.parsed
('w', False)
>>> entry.name, entry.provider_key, entry.parsed  # any other attribute reads through to the Tool
('getWeather', 'w', True)
>>> StoredTool("x", '{"id": "x"}', "demo.db").tool  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rated.errors.IndexFormatError: demo.db: stored record of tool 'x' is invalid: name: Field required
"""

from __future__ import annotations

import hashlib
import operator
from typing import Any

from pydantic import ValidationError

from rated.catalog.schema import Tool
from rated.errors import IndexFormatError
from rated.validation_text import one_line

__all__ = ["StoredTool", "parse_record", "record_digest"]


def record_digest(record: str) -> bytes:
    """A stored record's fingerprint (16 bytes): an unchanged record keeps its ``StoredTool`` (and parsed
    ``Tool``) across reloads, the lexical snapshot and ``sync_tools`` compare records by it."""
    return hashlib.blake2b(record.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def parse_record(record: str, tool_id: str, where: str = "store") -> Tool:
    """The ``Tool`` a stored record holds, validated; ``IndexFormatError`` naming ``tool_id`` and ``where``
    for a record that is not a valid tool or holds another id than the one it is stored under."""
    try:
        tool = Tool.model_validate_json(record)
    except ValidationError as exc:
        raise IndexFormatError(
            f"{where}: stored record of tool {tool_id!r} is invalid: {one_line(exc)}"
        ) from None
    if tool.id != tool_id:
        raise IndexFormatError(f"{where}: stored record of tool {tool_id!r} holds the id {tool.id!r}")
    return tool


class StoredTool:
    """One tool of the pool: ``id`` and ``digest`` (of its stored record) at once, ``tool`` parsed from the
    record on first read and kept. Any other attribute (``name``, ``provider_key``, ...) reads through to
    ``tool``, so the semantic index, which reads only ids and, for the tools whose text it builds, their
    fields, takes these where it takes ``Tool`` objects; what the retriever returns are the ``Tool``s."""

    # no more memory than the (digest, Tool) pair and the provider list a retriever kept before
    __slots__ = ("_held", "_where", "digest", "id", "provider_key")

    def __init__(self, tool_id: str, record: str, where: str, digest: bytes | None = None) -> None:
        self.id = tool_id
        self.digest = record_digest(record) if digest is None else digest
        self._held: str | Tool = record  # the record until parsed, then its Tool
        self._where = where

    @classmethod
    def of(cls, tool: Tool, record: str) -> StoredTool:
        """An entry for ``tool``, already parsed from (and stored as) ``record``."""
        entry = cls(tool.id, record, "")
        entry._held, entry.provider_key = tool, tool.provider_key
        return entry

    @property
    def parsed(self) -> bool:
        """Whether ``tool`` has been read (the record is then parsed and its text dropped)."""
        return type(self._held) is not str

    @property
    def tool(self) -> Tool:
        """The tool, parsed and validated from its record on the first read (``IndexFormatError``, naming
        it, for a damaged record: raised again at every read)."""
        held = self._held
        if type(held) is str:  # two threads may both parse it: equal Tools, the last one kept
            tool = parse_record(held, self.id, self._where)
            self.provider_key = tool.provider_key  # a plain slot from now on: read for every candidate
            self._held = held = tool
        return held  # type: ignore[return-value]

    def __getattr__(self, name: str) -> Any:  # what the fields' properties below do not cover
        if name.startswith("_"):  # a slot not set yet (copy, pickle), a dunder probe: not the tool's
            raise AttributeError(name)
        return getattr(self.tool, name)

    def __repr__(self) -> str:
        return f"StoredTool({self.id!r}{'' if self.parsed else ', not parsed yet'})"


def _read_through(name: str) -> property:
    return property(operator.attrgetter(f"tool.{name}"), doc=f"``tool.{name}`` (parsed on first read)")


# each Tool field as a property: a text built from 50,000 entries reads about 11 fields of each, and
# __getattr__ (called after a failed lookup) costs 0.85 us a read against 0.18 us for these
for _name in Tool.model_fields:
    if _name not in StoredTool.__slots__:
        setattr(StoredTool, _name, _read_through(_name))
del _name
