"""Saved lexical indexes: a process opening a large catalog restores the lexical index that another built
instead of reading every tool's text again (at 50,000 tools, seconds of text building and tokenizing).

A snapshot holds the lexical index's arrays and, per tool, its id and the digest of its stored record. It
is used only when it was made under the same lexical settings by the same parsing, text and tokenizer
code (a fingerprint of those modules' files and of the tokens of a fixed probe tool), and when the pool
now is the saved one after removals and appends, which is what other writers' ``add_tools`` /
``remove_tools`` make of it: those are applied in place, tokenizing only the new tools. Anything else (a
tool changed in place, another order, a damaged or foreign blob) is ignored and the index is built as
usual. A snapshot is a cache, never the source of truth: the restored index equals a fresh build to the
last bit.

Beside it, under ``FACETS_NAME``, the tools' facets (``rated.tool_filter.FacetTable``: each tool's
platform, tags, provider and auth kind, which the first filter by one of them needs): a process opening
the store reads them from there instead of parsing every record (0.5 s at 20,000 tools). The table is
matched tool by tool on the id and the record digest, so it serves whatever pool the store holds now
(tools added, removed, changed or reordered since: only their records are parsed), and it is used only
when made by the same parsing and filter code (``facets_fingerprint``).

>>> from rated import Tool
>>> from rated.index.semantic import DEFAULT_SEMANTIC, SemanticIndex
>>> tools = [Tool(id="w", name="getWeather"), Tool(id="m", name="sendMail")]
>>> built = SemanticIndex.build(tools, np.eye(2, dtype=np.float32))
>>> blob = dump(built, [b"d1", b"d2"])
>>> lexical, changed = restore(blob, DEFAULT_SEMANTIC, tools, [b"d1", b"d2"])
>>> lexical.ids, changed
(['w', 'm'], 0)
>>> restore(blob, DEFAULT_SEMANTIC, tools, [b"d1", b"XX"])[1]  # "m" changed: removed, then added again
2
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json
import logging
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rated.catalog.schema import Auth, Tool
from rated.catalog.text import lexical_text
from rated.index.npzblob import from_json, json_array, open_npz, pack

if TYPE_CHECKING:  # for type hints only
    from rated.index.lexical import BM25Index
    from rated.index.semantic import SemanticConfig, SemanticIndex
    from rated.index.tfidf import TfidfIndex
    from rated.tool_filter import FacetTable

__all__ = [
    "FACETS_FORMAT",
    "FACETS_NAME",
    "FORMAT",
    "NAME",
    "dump",
    "dump_facets",
    "facets_fingerprint",
    "fingerprint",
    "restore",
    "restore_facets",
]

NAME = "lexical-index"  # the name a store keeps the snapshot under
FORMAT = 1
FACETS_NAME = "tool-facets"  # the name a store keeps the facet table under
FACETS_FORMAT = 1
log = logging.getLogger(__name__)

# a tool whose lexical tokens change whenever the text or tokenizer code does: camelCase, an acronym,
# plurals, stop words, digits, parameters, tags, a provider and non-ASCII letters
_PROBE = Tool(
    id="probe",
    name="getHTTPWeatherForecasts_v2",
    description="Returns the cities' daily forecasts for São Paulo and other places, in JSON.",
    parameters={
        "type": "object",
        "properties": {"cityName": {"type": "string", "description": "Names of the cities"}},
    },
    tags=("weather", "Forecasts"),
    provider="OpenWeatherMap",
)


# the code that turns a stored record into a snapshot's tokens and arrays (parsing, text, tokenizer, the
# indexes' export): rated's version names a release, not a checkout, and the probe tool sees only what it
# exercises, so two builds of one version (a deploy from two commits) are told apart by these files
_CODE = (
    "rated.catalog.schema",
    "rated.catalog.text",
    "rated.index.tokenize",
    "rated.index.refit",
    "rated.index.lexical",
    "rated.index.tfidf",
    "rated.index.snapshot",
)


# the code that turns a stored record into a tool's facets (parsing, folding, the table and its export)
_FACETS_CODE = ("rated.catalog.schema", "rated.stored_tool", "rated.tool_filter", "rated.index.snapshot")

# a tool whose facets change whenever parsing or folding does: tags repeated in other cases, a letter
# that folds to two, no provider (the tool's id stands in), an auth kind
_FACETS_PROBE = Tool(
    id="probe-ǅ",
    name="p",
    source="LangChain",
    tags=("Web", "web", "Straße", "STRASSE"),
    auth=Auth.model_validate({"type": "api_key", "credential": "KEY"}),  # parsed, as a record's is
)


def _code() -> list[Any]:
    """A digest of each module in ``_CODE``'s file, and what else decides the tokens: the Unicode tables
    (word characters, lower case), the record parser's version and the stop words."""
    from rated.index.tokenize import STOP_WORDS

    return [*_code_of(_CODE), sorted(STOP_WORDS)]


def _code_of(modules: Sequence[str]) -> list[Any]:
    """A digest of each module's file, the Unicode tables' version and the record parser's."""
    import pydantic

    digests = []
    for name in modules:
        try:
            data = Path(importlib.import_module(name).__file__ or "").read_bytes()
        except OSError:  # no file to read (a frozen build): the version and the probe still count
            data = b""
        digests.append(hashlib.blake2b(data, digest_size=16).hexdigest())
    return [digests, unicodedata.unidata_version, pydantic.VERSION]


@functools.lru_cache(maxsize=16)
def fingerprint(config: SemanticConfig) -> str:
    """What a snapshot must have been made under to be used: format, rated version and code, lexical
    settings and the probe tool's tokens."""
    from rated import __version__
    from rated.index.semantic import new_lexical_index

    lexical = new_lexical_index(config)
    probe = [] if lexical is None else lexical.tokens(lexical_text(_PROBE, config.lexical_text))
    settings = [config.lexical, config.stem, dataclasses.asdict(config.lexical_text)]
    parts = [FORMAT, __version__, _code(), *settings, probe]
    return hashlib.blake2b(json.dumps(parts, sort_keys=True).encode(), digest_size=16).hexdigest()


def dump(index: SemanticIndex, digests: Sequence[bytes]) -> bytes | None:
    """A snapshot of ``index``'s lexical part, ``digests`` being its tools' record digests (one width);
    ``None`` when the index has no lexical part or no tools."""
    lexical = index.lexical
    if lexical is None or not len(lexical):
        return None
    ids = lexical.ids
    if len(digests) != len(ids) or len({len(d) for d in digests}) != 1:
        raise ValueError(f"{len(ids)} tools need {len(ids)} record digests of one width")
    header = {"format": FORMAT, "fingerprint": fingerprint(index.config), "tools": len(ids)}
    arrays = {f"lexical_{name}": array for name, array in lexical.export().items()}
    return pack(
        header=json_array(header),
        ids=json_array(ids),
        digests=np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(len(ids), -1),
        **arrays,
    )


def restore(
    blob: bytes, config: SemanticConfig, tools: Sequence[Tool], digests: Sequence[bytes]
) -> tuple[BM25Index | TfidfIndex, int] | None:
    """The lexical index of ``tools`` (whose stored records have ``digests``) from a snapshot, and how
    many tools it had to drop or add to get there; ``None`` when the snapshot cannot give it."""
    try:
        return _restore(blob, config, tools, digests)
    except Exception as exc:  # a cache: whatever is wrong with it, the index is built instead
        log.debug("lexical snapshot not used: %s: %s", type(exc).__name__, exc)
        return None


def _restore(
    blob: bytes, config: SemanticConfig, tools: Sequence[Tool], digests: Sequence[bytes]
) -> tuple[BM25Index | TfidfIndex, int] | None:
    from rated.index.semantic import new_lexical_index

    with open_npz(blob) as saved:
        header = from_json(saved["header"])
        if header.get("format") != FORMAT or header.get("fingerprint") != fingerprint(config):
            return None
        saved_ids = from_json(saved["ids"])
        saved_digests = [row.tobytes() for row in saved["digests"]]
        arrays = {k.removeprefix("lexical_"): saved[k] for k in saved.files if k.startswith("lexical_")}
    if not isinstance(saved_ids, list) or len(saved_ids) != len(saved_digests):
        return None
    ids = [t.id for t in tools]
    current = dict(zip(ids, digests, strict=True))
    kept = [tool_id for tool_id, d in zip(saved_ids, saved_digests, strict=True) if current.get(tool_id) == d]
    n = len(kept)
    if not n or kept != ids[:n]:  # not the saved pool after removals and appends
        return None
    lexical = new_lexical_index(config)
    if lexical is None:
        return None
    lexical.restore(saved_ids, arrays)
    keep = set(kept)
    removed = [tool_id for tool_id in saved_ids if tool_id not in keep]
    if removed:
        lexical.remove(removed)
    if n < len(ids):
        lexical.add(ids[n:], [lexical_text(t, config.lexical_text) for t in tools[n:]])
    return lexical, len(removed) + len(ids) - n


@functools.lru_cache(maxsize=1)
def facets_fingerprint() -> str:
    """What a facet table must have been made under to be used: format, rated version and code, and the
    probe tool's facets."""
    from rated import __version__
    from rated.tool_filter import tool_facets

    source, tags, provider, auth = tool_facets(_FACETS_PROBE)
    probe = [source, sorted(tags), provider, auth]
    parts = [FACETS_FORMAT, __version__, _code_of(_FACETS_CODE), probe]
    return hashlib.blake2b(json.dumps(parts, sort_keys=True).encode(), digest_size=16).hexdigest()


def dump_facets(facets: FacetTable) -> bytes | None:
    """A snapshot of ``facets`` (``None`` for a table whose tools have no record digests: no pool could be
    matched to it)."""
    if facets.digests is None:
        return None
    header = {"format": FACETS_FORMAT, "fingerprint": facets_fingerprint(), "tools": len(facets)}
    return pack(
        header=json_array(header), ids=json_array(facets.ids), digests=facets.digests, **facets.export()
    )


def restore_facets(blob: bytes) -> FacetTable | None:
    """The facet table a snapshot holds; ``None`` when it is damaged, foreign or made by other code."""
    from rated.tool_filter import FacetTable

    try:
        with open_npz(blob) as saved:
            header = from_json(saved["header"])
            if header.get("format") != FACETS_FORMAT or header.get("fingerprint") != facets_fingerprint():
                return None
            ids = from_json(saved["ids"])
            if not isinstance(ids, list) or not set(map(type, ids)) <= {str}:
                return None
            arrays = {k: saved[k] for k in saved.files if k not in ("header", "ids")}
        return FacetTable.restore(ids, arrays.pop("digests"), arrays)
    except Exception as exc:  # a cache: whatever is wrong with it, the records are parsed instead
        log.debug("facet snapshot not used: %s: %s", type(exc).__name__, exc)
        return None
