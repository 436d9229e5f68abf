"""How a ``Retriever`` is put together: catalog input, tool encoding, stored records, policy and encoder
checks. Kept apart from the facade so that ``retriever.py`` reads as the request path."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

import numpy as np

from rated.catalog.schema import Tool
from rated.encode.base import Encoder
from rated.errors import CatalogError, CatalogProblem, ConfigError, ModelError, StoreError
from rated.policy.base import Policy, all_finite
from rated.store.base import Store
from rated.store.meta import EncoderIdentity
from rated.store.open import REDIS_SCHEMES
from rated.store.redis_url import redact_url
from rated.stored_tool import StoredTool, parse_record

if TYPE_CHECKING:  # for type hints only
    from rated.catalog.prior import PriorResult
    from rated.index.semantic import SemanticConfig, SemanticIndex

__all__ = [
    "as_tools",
    "build_index",
    "build_policy",
    "check_encoder",
    "check_encoder_object",
    "closing_on_error",
    "default_encoder",
    "describe_db",
    "drop_graph",
    "encode_tools",
    "parse_record",
    "policy_params",
    "progress_status",
    "put_tools",
    "rated_version",
    "replace_catalog",
    "semantic_config",
    "settle_graph",
    "unit_rows",
]

log = logging.getLogger(__name__)
_HASH_ENCODER = re.compile(r"hash-(\d+)-s(\d+)$")


def as_tools(source: str | Path | Sequence[Tool | Mapping[str, Any]]) -> list[Tool]:
    """A catalog path, JSON text, or a list of Tools/dicts -> validated, duplicate-free Tools."""
    from rated.catalog.loaders import load_catalog

    if isinstance(source, (str, Path)):
        return load_catalog(source)
    items = list(source)
    if _all_tools(items):
        if not items:
            raise CatalogError("the catalog holds no tools")
        seen: set[str] = set()
        dupes = [t.id for t in items if t.id in seen or seen.add(t.id)]  # type: ignore[func-returns-value]
        if dupes:
            problems = [CatalogProblem(f"tool {d!r}", "id", "duplicate id") for d in dupes]
            raise CatalogError(f"{len(dupes)} duplicate tool id(s)", problems)
        return items
    return load_catalog([t.model_dump(mode="json") if isinstance(t, Tool) else t for t in items])


def _all_tools(items: list[Tool | Mapping[str, Any]]) -> TypeGuard[list[Tool]]:
    return all(isinstance(t, Tool) for t in items)


def put_tools(
    store: Store,
    tools: Sequence[Tool],
    embeddings: np.ndarray,
    prior: PriorResult,
    check_meta: Callable[[dict[str, Any]], None],
) -> int:
    """Persist new ``tools`` with their embeddings and prior (r_static and its per-tool detail);
    ``ToolExistsError`` when the store holds one of them already, and ``check_meta`` given the stored
    settings (both inside the change)."""
    return store.put_tools(*_tool_rows(tools, embeddings, prior), new_only=True, check_meta=check_meta)


def replace_catalog(
    store: Store,
    tools: Sequence[Tool],
    embeddings: np.ndarray,
    prior: PriorResult,
    meta: Mapping[str, Any],
    *,
    expect_empty: bool = False,
) -> int:
    """Swap the stored index for ``tools`` and ``meta`` in one change: a failed rebuild loses nothing.
    ``expect_empty``: refuse (``IndexExistsError``) if another writer has built an index there meanwhile."""
    return store.replace_catalog(*_tool_rows(tools, embeddings, prior), meta, expect_empty=expect_empty)


class _ToolRows(NamedTuple):
    """The arguments ``Store.put_tools`` and ``replace_catalog`` take first, in their order."""

    ids: list[str]
    records: list[str]
    embeddings: np.ndarray
    prior: np.ndarray
    prior_detail: list[dict[str, Any]]


def _tool_rows(tools: Sequence[Tool], embeddings: np.ndarray, prior: PriorResult) -> _ToolRows:
    return _ToolRows(
        [t.id for t in tools],
        [t.model_dump_json() for t in tools],
        embeddings,
        prior.r_static,
        [prior.record(i) for i in range(len(tools))],
    )


def build_index(
    store: Store,
    tools: Sequence[StoredTool],
    embeddings: np.ndarray,
    config: SemanticConfig,
    version: int | None = None,
) -> SemanticIndex:
    """The semantic index of the pool ``tools``: its lexical part restored from the store's snapshot where
    one fits (then only the records of tools appended since are parsed, for their text), else built from
    every tool's text (every record parsed: a damaged one raises ``IndexFormatError`` here); a snapshot is
    saved again when there was none that fitted or when following it took changes to a tenth of the pool
    or more. Likewise an HNSW dense part (above ``hnsw_threshold`` tools) is attached to the graph saved
    for exactly this pool, else built and its graph saved: only while the store's catalog version is still
    ``version`` when given (the one ``tools`` were read at), so that a graph of a catalog another writer
    has changed since never replaces the graph saved for the catalog stored now. Reading and saving are
    best effort (a snapshot the store cannot give is no snapshot; a busy or read-only store keeps the old
    one, or none: the next process builds the index)."""
    from rated.index import hnsw_snapshot, snapshot
    from rated.index.semantic import SemanticIndex, dense_kind

    digests = [t.digest for t in tools]
    blob = _load_cached(store, snapshot.NAME)
    # StoredTool entries stand in for Tools: the index reads their ids, and a text's fields through them
    pool: Sequence[Tool] = tools  # type: ignore[assignment]
    restored = None if blob is None else snapshot.restore(blob, config, pool, digests)
    lexical, changed = restored or (None, len(tools))
    dense = None
    if dense_kind(config, len(tools)) == "hnsw":
        blob = _load_cached(store, hnsw_snapshot.NAME)
        ids = [t.id for t in tools]
        dense = None if blob is None else hnsw_snapshot.restore(blob, config, ids, embeddings)
    del blob  # a large graph's blob is not kept while the index is built
    index = SemanticIndex.build(pool, embeddings, config, lexical=lexical, dense=dense)
    if restored is None or changed * 10 >= len(tools):
        _save_cached(store, snapshot.NAME, snapshot.dump(index, digests))
    if dense is None:  # a graph was built (None for a flat index): the next process attaches it
        _save_cached(store, hnsw_snapshot.NAME, hnsw_snapshot.dump(index.dense), version)
    return index


def settle_graph(store: Store, index: SemanticIndex, version: int, had_graph: bool) -> SemanticIndex:
    """After this process's own add or removal left the store at catalog ``version`` and ``index`` holding
    exactly that catalog: ``index``, or the same pool with the dense kind its size now calls for (a change
    that crossed ``hnsw_threshold``; the lexical part is kept, not rebuilt), as a process opening the store
    builds it. On an HNSW dense part its graph (grown by the add, rebuilt by the removal, or just built) is
    saved, so that the next process to open the store attaches it instead of building it; on a flat one
    the graph saved for the pool before the change (``had_graph``) is dropped. Both only while the catalog
    version is still ``version`` (checked by the store inside the write): of two writers, the one whose
    change came first never replaces or drops what the later one saved. Best effort, as ``build_index``'s
    own saving (the graph is labelled by the pool it links, so a graph that is not saved costs the next
    opener a build, never a wrong answer)."""
    from rated.index import hnsw_snapshot
    from rated.index.semantic import SemanticIndex, dense_kind

    if index.dense.kind != dense_kind(index.config, len(index)):
        index = SemanticIndex.build(index.tools, index.dense.vectors, index.config, lexical=index.lexical)
    if index.dense.kind == "hnsw":
        _save_cached(store, hnsw_snapshot.NAME, hnsw_snapshot.dump(index.dense), version)
    elif had_graph:
        drop_graph(store, version)
    return index


def drop_graph(store: Store, version: int) -> None:
    """Delete the saved HNSW graph while the catalog version is ``version`` (a pool that no longer uses
    one: no process would attach it, and it held the store's space). Best effort."""
    from rated.index import hnsw_snapshot

    try:
        store.delete_cached(hnsw_snapshot.NAME, catalog_version=version)
    except StoreError as exc:
        log.debug("%s not deleted: %s", hnsw_snapshot.NAME, exc)


def _load_cached(store: Store, name: str) -> bytes | None:
    try:
        return store.load_cached(name)
    except StoreError as exc:  # e.g. a cache laid out by another version: build, as without one
        log.debug("%s not read: %s", name, exc)
        return None


def _save_cached(store: Store, name: str, data: bytes | None, version: int | None = None) -> None:
    if data is None:
        return
    try:
        if version is None:
            store.save_cached(name, data)
        else:
            store.save_cached(name, data, catalog_version=version)
    except StoreError as exc:
        log.debug("%s not saved: %s", name, exc)


@contextmanager
def progress_status(show: bool, message: str) -> Iterator[None]:
    """A spinner on stderr with ``message`` while a long step runs, when ``show``."""
    if not show:
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(message):
        yield


@contextmanager
def closing_on_error(store: Store, db: object) -> Iterator[None]:
    """Close a store opened for ``db`` when what follows fails; a store the caller passed stays theirs."""
    try:
        yield
    except BaseException:
        if store is not db:
            store.close()
        raise


def encode_tools(encoder: Encoder, tools: Sequence[Tool], progress: bool) -> np.ndarray:
    from rated.catalog.text import tool_text

    emb = encoder.encode_tools([tool_text(t) for t in tools], progress=progress)
    return unit_rows(emb, len(tools), int(encoder.dim), f"encoder {encoder.name}", "tool")


def unit_rows(vectors: Any, n: int, dim: int, source: str, what: str) -> np.ndarray:
    """An encoder's output as ``(n, dim)`` float32 unit rows; ``ModelError`` for any other shape, NaN or inf,
    or an all-zero row. Rows that are not unit-norm are scaled to it: cosine is what the index and the
    policy's context assume, and an unnormalised encoder would otherwise saturate or shrink every score."""
    try:
        arr = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{source} returned {what} embeddings that are not an array: {exc}") from None
    if arr.shape != (n, dim):
        raise ModelError(f"{source} returned {what} embeddings of shape {arr.shape}, expected ({n}, {dim})")
    if not all_finite(arr):
        raise ModelError(f"{source} returned NaN or infinite {what} embeddings")
    # squared norms in float32 (one pass, no copy): this runs on every uncached query
    sq = np.einsum("ij,ij->i", arr, arr)
    if n and float(sq.min()) < 1e-12:
        row = int(np.argmin(sq))
        raise ModelError(f"{source} returned an all-zero {what} embedding (row {row})")
    if n and float(np.abs(sq - 1.0).max()) > 2e-4:  # |norm - 1| > 1e-4
        arr = (arr / np.sqrt(sq.astype(np.float64))[:, None]).astype(np.float32)
    return arr


def check_encoder_object(
    encoder: Encoder | str | os.PathLike[str] | Any, *, progress: bool = False
) -> Encoder:
    """The encoder an ``encoder=`` argument means: a name (``default``, ``hash[-DIM]``, an ONNX model folder,
    as a ``str`` or a ``Path``) resolved as ``rated index --encoder`` resolves it (``rated.encode.spec``),
    and a clear ``ConfigError`` (not an AttributeError later) for something that is not an ``Encoder``."""
    if isinstance(encoder, (str, os.PathLike)):
        from rated.encode.spec import encoder_from_spec

        encoder = encoder_from_spec(os.fspath(encoder), progress=progress)
    if not isinstance(encoder, Encoder):
        raise ConfigError(
            f"encoder must implement rated.encode.Encoder (name, dim, encode_queries, encode_tools), "
            f"got {type(encoder).__name__}"
        )
    dim = encoder.dim
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ConfigError(f"encoder {encoder.name!r} has dim {dim!r}; expected an integer >= 1")
    if not isinstance(encoder.name, str) or not encoder.name:
        raise ConfigError(f"encoder name must be a non-empty string, got {encoder.name!r}")
    return encoder


def semantic_config(data: SemanticConfig | Mapping[str, Any] | None) -> SemanticConfig:
    """The semantic-stage settings from a ``SemanticConfig``, a dict of its fields, or None (defaults)."""
    from rated.catalog.text import TextConfig
    from rated.index.semantic import SemanticConfig

    if data is None or isinstance(data, SemanticConfig):
        return data or SemanticConfig()
    if not isinstance(data, Mapping):
        raise ConfigError(f"semantic must be a SemanticConfig or a dict of its fields, got {data!r}")
    data = dict(data)
    try:
        if isinstance(data.get("lexical_text"), Mapping):
            data["lexical_text"] = TextConfig(**data["lexical_text"])
        return SemanticConfig(**data)
    except TypeError as exc:
        raise ConfigError(f"invalid semantic configuration: {exc}") from None


def build_policy(policy: str | Policy, params: Mapping[str, Any]) -> Policy:
    if not isinstance(policy, str):
        if params:
            raise ConfigError("policy_params apply to a policy given by name, not to a Policy instance")
        if not isinstance(policy, Policy):
            raise ConfigError(f"policy must be a name or a Policy, got {type(policy).__name__}")
        return policy
    from rated.policy import make_policy

    return make_policy(policy, **params)


def policy_params(policy: Policy) -> dict[str, Any]:
    """Hyper-parameters as JSON values (JSON here allows inf; anything exotic is saved as its repr)."""
    get_params = getattr(policy, "get_params", None)
    params = dict(get_params()) if callable(get_params) else {}
    return json.loads(json.dumps(params, default=repr))


def default_encoder(progress: bool, quantized: bool | None = None) -> Encoder:
    from rated.encode import default_encoder

    return default_encoder(progress=progress, quantized=quantized)


def _default_model_name() -> str:
    from rated.encode.prepare import MINILM

    return MINILM.name


def check_encoder(
    encoder: Encoder | str | os.PathLike[str] | None, saved: EncoderIdentity, where: str
) -> Encoder:
    """The given encoder (or the one its name means) if it matches the index, else the one the index was
    built with."""
    if encoder is None:
        match = _HASH_ENCODER.match(saved.name)
        if match:
            from rated.encode.testing import HashEncoder

            encoder = HashEncoder(dim=int(match.group(1)), seed=int(match.group(2)))
        elif saved.model_dir and Path(saved.model_dir).is_dir():
            from rated.encode.onnx import OnnxEncoder

            quantized = saved.name.endswith("-int8")
            try:
                encoder = OnnxEncoder.load(saved.model_dir, quantized=quantized)
            except ModelError:
                if saved.name.removesuffix("-int8") != _default_model_name():
                    raise
                # the default model's folder is damaged: the default encoder prepares it again (the
                # identity check below still refuses different weights)
                encoder = default_encoder(progress=True, quantized=quantized)
        elif saved.name.removesuffix("-int8") == _default_model_name():
            encoder = default_encoder(progress=True, quantized=saved.name.endswith("-int8"))
        else:  # a user-defined encoder (or a model folder that is gone): preparing the default cannot help
            missing = f" (its model folder {saved.model_dir} is missing)" if saved.model_dir else ""
            raise ConfigError(
                f"{where} was indexed with encoder {saved}{missing}, which rated cannot load by itself: "
                "pass that encoder (encoder=...)"
            )
    encoder = check_encoder_object(encoder)
    found = EncoderIdentity.of(encoder)
    if not found.same_embeddings(saved):
        raise ConfigError(
            f"{where} was indexed with encoder {saved}, not {found}: pass that encoder, or re-index"
        )
    return encoder


def describe_db(db: object) -> str:
    """How error messages name a database: its path or URL (never with its password), or the in-memory
    store."""
    if db is None:
        return "the in-memory store"
    if isinstance(db, str) and db.startswith(REDIS_SCHEMES):  # the URL as the user gave it
        return redact_url(db)
    return str(getattr(db, "path", None) or getattr(db, "url", None) or db)


def rated_version() -> str:
    from rated import __version__

    return __version__
