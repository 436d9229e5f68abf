"""Catalog-row checks and defaults shared by the stores, so that every backend accepts and returns alike."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, overload

import numpy as np

from rated.errors import ConfigError, IndexFormatError, ToolExistsError

__all__ = [
    "IdSpellings",
    "PriorDetails",
    "check_max_outcomes",
    "check_tool_rows",
    "decode_json",
    "decode_meta",
    "decode_vector",
    "empty_catalog_dim",
    "evidence_of",
    "refuse_clashes",
]


def evidence_of(keys: Iterable[str], tool_ids: Collection[str]) -> list[str]:
    """The evidence keys (``KIND:TOOL_ID``, ``EvidenceStore``) among ``keys`` that are about one of
    ``tool_ids``: what goes when those tools are removed."""
    return [k for k in keys if k.partition(":")[2] in tool_ids]


def check_max_outcomes(max_outcomes: Any) -> int | None:
    """The outcome-log cap a store was given: None (keep every record) or a positive integer."""
    if max_outcomes is not None and (
        isinstance(max_outcomes, bool) or not isinstance(max_outcomes, int) or max_outcomes < 1
    ):
        raise ConfigError(f"max_outcomes must be None or an integer >= 1, got {max_outcomes!r}")
    return max_outcomes


def check_tool_rows(
    ids: Sequence[str],
    records: Sequence[str],
    embeddings: np.ndarray,
    prior: np.ndarray,
    prior_detail: Sequence[Mapping[str, Any]] | None,
) -> tuple[np.ndarray, list[Mapping[str, Any]]]:
    """``put_tools``' arguments, checked to be aligned: the embeddings as C-contiguous little-endian
    float32 ``(n, dim)`` and one prior-detail mapping per tool (empty when none was given)."""
    emb = np.ascontiguousarray(embeddings, dtype="<f4")
    if emb.ndim != 2 or emb.shape[0] != len(ids) or len(records) != len(ids) or len(prior) != len(ids):
        raise ConfigError("put_tools: ids, records, embeddings and prior must have the same length")
    details = list(prior_detail) if prior_detail is not None else [{} for _ in ids]
    return emb, details


class IdSpellings:
    """The ids a catalog holds, found by any Unicode spelling of them: "é" typed composed or decomposed,
    or an id pasted from pieces with one accent of each (in neither normal form), on either side. Ids are
    compared by their NFC form, as the catalog loader compares them (it refuses two ids equal so), and
    the catalog changes refuse such a second id, so at most one held id matches.

    ``held``: the ids (read as they are: make a new one when they change). The held ids not in NFC are
    indexed by their NFC form when a lookup first needs it (most catalogs have none)."""

    def __init__(self, held: Collection[str]) -> None:
        self._held = held
        self._unnormalized: dict[str, str] | None = None

    def find(self, tool_id: object) -> str | None:
        """The held id ``tool_id`` spells (itself when held as typed), or None."""
        if not isinstance(tool_id, str):
            return None
        if tool_id in self._held:
            return tool_id
        nfc = unicodedata.normalize("NFC", tool_id)
        if nfc in self._held:
            return nfc
        if self._unnormalized is None:
            self._unnormalized = {}
            for held in self._held:
                if not held.isascii() and (form := unicodedata.normalize("NFC", held)) != held:
                    self._unnormalized.setdefault(form, held)
        return self._unnormalized.get(nfc)

    def other(self, tool_id: str) -> str | None:
        """The held id that is ``tool_id`` spelled otherwise (a new tool under ``tool_id`` would clash with
        it), or None (not held in any spelling, or held as typed)."""
        found = self.find(tool_id)
        return None if found == tool_id else found


# the ASCII characters that a character outside ASCII is canonically equivalent to (U+212A KELVIN SIGN is
# "K", U+037E GREEK QUESTION MARK ";", U+1FEF GREEK VARIA "`"): an ASCII id without them has no spelling
# but itself (unicodedata has no other character whose decomposition is all ASCII)
_ASCII_TWINS = frozenset("K;`")


def _may_have_twins(nfc: str) -> bool:
    """Whether an id whose NFC form is ``nfc`` may be held in a spelling that is not ASCII."""
    return not nfc.isascii() or not _ASCII_TWINS.isdisjoint(nfc)


def refuse_clashes(
    ids: Sequence[str],
    held: Callable[[list[str]], Collection[str]],
    *,
    new_only: bool,
    delete: Collection[str] = (),
    not_ascii: Callable[[], Iterable[str]],
) -> None:
    """Inside a ``put_tools`` change: ``ToolExistsError`` naming the ids the store holds already (with
    ``new_only``) and, always, each new id that the catalog would then hold in two spellings: ids equal
    by their NFC form, as ``IdSpellings`` (the retriever's lookups) and the catalog loader compare them
    ("é" composed or decomposed, the Kelvin sign U+212A and "K"); the store holds another spelling of it
    (not removed by this change), or the change brings two.

    ``held(keys)``: which keys the store holds; ``not_ascii()``: the held ids that are not ASCII (any held
    id not in NFC is among them; the store may give more), read only when a new id may equal one of them
    (it is not ASCII, or holds "K", ";" or "`"); both read inside the change. ASCII ids without those
    three characters cost no read without ``new_only``."""
    given = list(dict.fromkeys(ids))
    nfc = {i: i if i.isascii() else unicodedata.normalize("NFC", i) for i in given}
    twins = [i for i in given if _may_have_twins(nfc[i])]
    if not given or not (new_only or twins or any(nfc[i] != i for i in given)):
        return
    forms = [form for form in dict.fromkeys(nfc.values()) if form not in nfc]
    present = set(held(given + forms))
    if twins:
        present.update(not_ascii())
    removed = set(delete)
    spellings = IdSpellings(present - removed)
    by_form: dict[str, list[str]] = {}
    for i in given:
        by_form.setdefault(nfc[i], []).append(i)
    clash = {i for i in given if new_only and i in present}
    for i in given:
        if i not in present and (len(by_form[nfc[i]]) > 1 or spellings.other(i) is not None):
            clash.add(i)  # the change brings another spelling of it, or the store holds one
    if clash:
        raise ToolExistsError([i for i in given if i in clash])


def empty_catalog_dim(meta: Mapping[str, Any]) -> int:
    """The embedding size of a catalog with no tools yet: the saved encoder's, else 0."""
    return int(meta.get("encoder", {}).get("dim", 0))


def decode_json(raw: str | bytes, where: str, what: str) -> Any:
    """Stored JSON, or ``IndexFormatError`` naming the store and the damaged item (not a JSONDecodeError)."""
    try:
        return json.loads(raw)
    except (ValueError, TypeError) as exc:  # JSONDecodeError, bad UTF-8, a non-text value
        raise IndexFormatError(f"{where}: damaged {what}: not valid JSON ({exc})") from None


def decode_meta(raw: str | bytes | None, where: str) -> dict[str, Any]:
    """The saved index settings: a JSON object ({} when none were saved)."""
    if not raw:
        return {}
    meta = decode_json(raw, where, "index settings")
    if not isinstance(meta, dict):
        raise IndexFormatError(
            f"{where}: damaged index settings: a JSON {type(meta).__name__}, not an object"
        )
    return meta


def decode_vector(raw: bytes, dim: int, where: str, tool_id: str) -> np.ndarray:
    """One stored float32 embedding of ``dim`` values."""
    if not isinstance(raw, bytes) or len(raw) != 4 * dim:
        size = f"{len(raw)} bytes" if isinstance(raw, bytes) else f"a {type(raw).__name__}"
        raise IndexFormatError(
            f"{where}: damaged embedding for tool {tool_id!r} ({size}, expected {4 * dim} bytes)"
        )
    return np.frombuffer(raw, dtype="<f4")


class PriorDetails(Sequence[dict[str, Any]]):
    """Each tool's stored prior detail (a JSON object of its components, for display), decoded when read:
    ``Retriever.open`` never reads them, and decoding 50,000 took a tenth of a second on every open. A
    damaged one raises ``IndexFormatError`` naming the store and the tool when it is read."""

    __slots__ = ("_ids", "_raw", "_where")

    def __init__(self, raw: Sequence[str | bytes], ids: Sequence[str], where: str) -> None:
        self._raw, self._ids, self._where = raw, ids, where

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        detail = decode_json(self._raw[i], self._where, f"prior detail for tool {self._ids[i]!r}")
        if not isinstance(detail, dict):
            raise IndexFormatError(f"{self._where}: damaged prior detail for tool {self._ids[i]!r}")
        return detail

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PriorDetails({len(self)} tools)"
