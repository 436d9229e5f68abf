"""Redis store: shared state for several service replicas on several machines.

Atomicity: ``update_states`` is an optimistic transaction. It WATCHes the state keys, reads them, lets
the caller compute the new states, and commits them with the outcome record in one MULTI/EXEC (through a
small Lua script that also numbers the change). If another writer touched one of the keys in between, EXEC
fails and the read-modify-write is retried, until ``busy_timeout`` seconds have passed
(``StoreBusyError``). So no concurrent update is lost; ``update`` may run more than once and must depend
only on what it is given.

A lost connection is never retried blindly: reads are retried once (a pooled connection the server closed
on restart), a transaction is re-run only when the connection broke before EXEC was sent, and a connection
lost after EXEC was sent is a ``StoreError`` saying the change may or may not have been applied (re-running
it could count one feedback twice). Every call gives up after ``timeout`` seconds without a reply (a
stalled server is a ``StoreTimeoutError``, never a hang); ``?socket_timeout=`` in the URL overrides it. The
URL's query belongs to redis-py: an unknown key is a ``ConfigError`` when the store opens (``open_store``
takes rated's own ``?rated_*`` keys out first, see ``rated.store.redis_url``).

Durability is the Redis server's: enable ``appendonly yes`` (``appendfsync everysec`` or ``always``) on the
server if acknowledged feedback must survive a server crash. A server restored from an older copy (a
lagging replica promoted, a snapshot) moves the change counter backwards: ``states_since`` then returns
every state, so retrievers reload instead of missing the changes numbered anew.

Outcome log: Redis holds it in memory, so it is capped at the newest ``max_outcomes`` records (default
100,000, about 10 MB; None keeps all, the SQLite store's default; in a URL given to ``open_store``:
``?rated_max_outcomes=N`` or ``=none``). ``outcome_stats`` is exact whatever the cap: per-tool counts and
the last outcome are kept in a hash updated with each record, so reading them costs one hash read instead
of a scan of the log.

The client (``redis`` package, the ``rated[redis]`` extra) is imported only when a RedisStore is created.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from rated.errors import ConfigError, IndexFormatError, StoreBusyError, StoreError
from rated.extras import install_hint
from rated.store.base import (
    FORMAT_VERSION,
    IndexExistsError,
    LastToolError,
    OutcomeRecord,
    OutcomeStats,
    StoredCatalog,
    StoreTimeoutError,
)
from rated.store.redis_url import redact_url as _redact
from rated.store.redis_url import unknown_option
from rated.store.rows import (
    check_max_outcomes,
    check_tool_rows,
    decode_json,
    decode_meta,
    decode_vector,
    empty_catalog_dim,
    evidence_of,
    refuse_clashes,
)
from rated.store.stats import outcome_slot, recent_outcomes, summarise_outcomes

__all__ = ["RedisStore"]

# KEYS: seq, changes zset, log list, stats hash, state keys...
# ARGV: n, record json or "", log cap (0: none), tool id, slot field, "time outcome", blobs..., names...
_COMMIT = """
local n = tonumber(ARGV[1])
local seq = tonumber(redis.call('GET', KEYS[1]) or '0')
if n > 0 then seq = redis.call('INCRBY', KEYS[1], n) end
for i = 1, n do
  redis.call('SET', KEYS[4 + i], ARGV[6 + i])
  redis.call('ZADD', KEYS[2], seq - n + i, ARGV[6 + n + i])
end
if ARGV[2] ~= '' then
  redis.call('RPUSH', KEYS[3], ARGV[2])
  local cap = tonumber(ARGV[3])
  if cap > 0 then redis.call('LTRIM', KEYS[3], -cap, -1) end
  redis.call('HINCRBY', KEYS[4], ARGV[5] .. ':' .. ARGV[4], 1)
  local last = redis.call('HGET', KEYS[4], 'l:' .. ARGV[4])
  local when = tonumber(string.match(ARGV[6], '^%S+'))
  if not last or when >= tonumber(string.match(last, '^%S+')) then
    redis.call('HSET', KEYS[4], 'l:' .. ARGV[4], ARGV[6])
  end
end
return seq
"""
_SLOT_FIELDS = ("s", "f", "c")  # successes, failures, caller errors: stats-hash fields '<slot>:<tool id>'
_TIMEOUT = 10.0  # seconds without a reply (or to connect) before a call fails, unless the URL sets its own
_MAX_OUTCOMES = 100_000
# what each fixed key holds, to name the culprit when a key of another type sits in the namespace
_KEY_TYPES = {
    "format": "string", "meta": "string", "seq": "string", "catver": "string", "order": "zset",
    "changes": "zset", "tools": "hash", "emb": "hash", "prior": "hash", "ostats": "hash", "log": "list",
    "evidence": "set",
}  # fmt: skip
# evidence kinds written before the set NAMESPACE:evidence listed them (rated before eceefaf): removing a
# tool deletes NAMESPACE:e:KIND:TOOL_ID of these by name too, registered or not
_UNLISTED_EVIDENCE = ("retired",)


def _import_redis() -> Any:
    try:
        import redis
    except ImportError:
        raise StoreError(f"the Redis store needs the redis client: {install_hint('redis')}") from None
    return redis


class RedisStore:
    """``Store`` in a Redis database, under the key prefix ``namespace:``."""

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        namespace: str = "rated",
        busy_timeout: float = 5.0,
        create: bool = True,
        client: Any = None,
        timeout: float = _TIMEOUT,
        max_outcomes: int | None = _MAX_OUTCOMES,
    ) -> None:
        if not busy_timeout > 0:
            raise ConfigError(f"busy_timeout must be > 0 seconds, got {busy_timeout!r}")
        if not timeout > 0:
            raise ConfigError(f"timeout must be > 0 seconds, got {timeout!r}")
        if not isinstance(namespace, str) or not namespace or ":" in namespace:
            # "x:s" would share keys with namespace "x" (its state keys are "x:s:TOOL_ID")
            raise ConfigError(f"a Redis namespace is a non-empty name without ':', got {namespace!r}")
        redis = _import_redis()
        self._redis = redis
        self._lost = (redis.ConnectionError, redis.TimeoutError)
        self.url = _redact(url)  # how messages name the store: never with its password
        self.namespace = namespace
        self.busy_timeout = float(busy_timeout)
        self.max_outcomes = check_max_outcomes(max_outcomes)
        client_from_url = client is None
        if client is None:
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            try:  # the URL's own ?socket_timeout= wins; no silent retries (see the module docstring)
                client = redis.Redis.from_url(
                    url,
                    decode_responses=False,
                    socket_timeout=timeout,
                    socket_connect_timeout=timeout,
                    retry=Retry(NoBackoff(), 0),
                )
            except ValueError as exc:  # bad port, bracket, database number or query option
                raise ConfigError(f"invalid Redis URL {self.url!r}: {exc}") from None
        self._r = client
        try:
            found = self._call(lambda: self._r.get(self._k("format")))
        except TypeError as exc:  # redis-py hands unknown ?keys= to its connection, which refuses them now
            problem = unknown_option(exc) if client_from_url else None
            if problem is None:
                raise
            raise ConfigError(f"invalid Redis URL {self.url!r}: {problem}") from None
        if found is None:
            if not create:
                raise StoreError(f"{self._where}: no rated database there (see `rated index`)")
            self._call(lambda: self._r.setnx(self._k("format"), str(FORMAT_VERSION)))
        elif found.decode() != str(FORMAT_VERSION):
            raise IndexFormatError(
                f"{self._where}: store format version {found.decode()}, "
                f"this rated reads version {FORMAT_VERSION}"
            )
        self._commit = self._r.register_script(_COMMIT)
        if found is not None:
            self._count_old_log()

    def _count_old_log(self) -> None:
        """A log written before the per-tool counters existed: count it into them, once (``outcome_stats``
        reads only the counters, so its outcomes would otherwise count as none)."""
        ostats, log = self._k("ostats"), self._k("log")
        if self._call(lambda: self._r.exists(ostats) or not self._r.llen(log)):
            return

        def body(pipe: Any) -> Callable[[list[Any]], None]:
            # re-checked under WATCH: another opener may have counted it, or a writer appended, meanwhile
            stats = {} if pipe.exists(ostats) else summarise_outcomes(self._log_of(pipe.lrange(log, 0, -1)))
            pipe.multi()
            fields: dict[str, Any] = {}
            for st in stats.values():
                for slot, n in zip(_SLOT_FIELDS, (st.successes, st.failures, st.caller_errors), strict=True):
                    if n:
                        fields[f"{slot}:{st.tool_id}"] = n
                if st.last_outcome is not None and st.last_time is not None:
                    fields[f"l:{st.tool_id}"] = f"{float(st.last_time)!r} {st.last_outcome}"
            if fields:
                pipe.hset(ostats, mapping=fields)
            return lambda replies: None

        self._optimistic([ostats, log], body)

    @property
    def _where(self) -> str:
        """How errors name this store: URL and namespace."""
        return f"{self.url} ({self.namespace})"

    @property
    def _fixed_keys(self) -> list[str]:
        return [self._k("seq"), self._k("changes"), self._k("log"), self._k("ostats")]

    def _k(self, name: str) -> str:
        return f"{self.namespace}:{name}"

    def _call(self, fn: Callable[[], Any]) -> Any:
        """Run an idempotent call; once more on a connection the server closed (e.g. it restarted)."""
        for attempt in (0, 1):
            try:
                return fn()
            except self._redis.ConnectionError as exc:
                if attempt or isinstance(exc, self._redis.AuthenticationError):
                    raise self._error(exc) from None
            except self._redis.RedisError as exc:
                raise self._error(exc) from None

    def _error(self, exc: Exception) -> StoreError:
        """A ``StoreError`` that says what went wrong in words a user can act on (password masked)."""
        text = str(exc)
        if "NOAUTH" in text or "Authentication required" in text or "HELLO must be called" in text:
            text = "the server requires a password: give it in the URL (redis://:PASSWORD@host:port/db)"
        elif "WRONGPASS" in text or "invalid username-password" in text:
            text = "wrong password or user name for this server"
        elif "WRONGTYPE" in text:
            text = f"{self._wrong_type() or 'a key'} holds another kind of value than rated stores there"
            return StoreError(f"{self._where}: {text} (another application or index under this namespace?)")
        elif isinstance(exc, self._redis.TimeoutError):
            text = f"no reply in time ({text}): is the server overloaded or stalled?"
            return StoreTimeoutError(f"{self.url}: {text}")
        return StoreError(f"{self.url}: {text}")

    def _wrong_type(self) -> str | None:
        """The first of this namespace's fixed keys that holds a value of another type, if any."""
        try:
            pipe = self._r.pipeline(transaction=False)
            for name in _KEY_TYPES:
                pipe.type(self._k(name))
            found = pipe.execute()
        except self._redis.RedisError:
            return None
        for (name, expected), kind in zip(_KEY_TYPES.items(), found, strict=True):
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            if kind not in ("none", expected):
                return f"key {self._k(name)!r} ({kind}, not {expected})"
        return None

    def _optimistic(self, watch: Sequence[str], body: Callable[[Any], Callable[[list[Any]], Any]]) -> Any:
        """Run a transaction under WATCH ``watch`` until EXEC succeeds or busy_timeout passes.

        ``body(pipe)`` reads, calls ``pipe.multi()``, queues the writes and returns what turns EXEC's
        replies into the result. A conflict re-runs it; a connection lost before EXEC was sent re-runs it
        once; one lost after is a ``StoreError``, since the change may have been applied already.
        """
        deadline = time.monotonic() + self.busy_timeout
        delay = 0.0005
        reconnected = False
        while True:
            sent = False
            try:
                with self._r.pipeline() as pipe:
                    if watch:
                        pipe.watch(*watch)
                    finish = body(pipe)
                    sent = True
                    return finish(pipe.execute())
            except self._redis.WatchError as exc:
                lost = exc.__context__  # redis-py turns a connection error under WATCH into WatchError
                if isinstance(lost, self._lost):
                    reconnected = self._after_lost_connection(lost, sent, reconnected)
                    continue
                if time.monotonic() > deadline:
                    raise StoreBusyError(
                        f"{self.url}: kept conflicting with other writers for {self.busy_timeout:g} s"
                    ) from None
                time.sleep(delay * (0.5 + random.random()))  # jitter: contending writers fall out of step
                delay = min(delay * 2, 0.02)
            except self._lost as exc:
                reconnected = self._after_lost_connection(exc, sent, reconnected)
            except self._redis.RedisError as exc:
                raise self._error(exc) from None

    def _after_lost_connection(self, exc: Exception, sent: bool, reconnected: bool) -> bool:
        """Whether a transaction may run again after its connection broke (else raise ``StoreError``)."""
        if sent:
            lost = StoreTimeoutError if isinstance(exc, self._redis.TimeoutError) else StoreError
            raise lost(
                f"{self.url}: connection lost while committing ({exc}); the change may or may not have "
                "been applied"
            ) from None
        if reconnected or isinstance(exc, (self._redis.TimeoutError, self._redis.AuthenticationError)):
            raise self._error(exc) from None
        return True

    # ---- meta and catalog --------------------------------------------------------------------------
    def get_meta(self) -> dict[str, Any]:
        raw = self._call(lambda: self._r.get(self._k("meta")))
        return decode_meta(raw, self._where)

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        self._call(lambda: self._r.set(self._k("meta"), json.dumps(dict(meta), sort_keys=True)))

    def load_catalog(self) -> StoredCatalog:
        def read() -> list[Any]:
            pipe = self._r.pipeline(transaction=True)
            pipe.zrange(self._k("order"), 0, -1)
            for name in ("tools", "emb", "prior"):
                pipe.hgetall(self._k(name))
            return pipe.execute()

        order, tools, emb, prior = self._call(read)
        try:
            ids = tuple(i.decode() for i in order)
        except UnicodeDecodeError:
            raise IndexFormatError(
                f"{self._where}: damaged catalog order: a tool id is not UTF-8 text"
            ) from None
        dim = len(emb.get(order[0], b"")) // 4 if ids else empty_catalog_dim(self.get_meta())
        matrix = np.empty((len(ids), dim), dtype=np.float32)
        priors = np.empty(len(ids), dtype=np.float32)
        details = []
        for i, raw_id in enumerate(order):
            vec = emb.get(raw_id)
            if vec is None or len(vec) != 4 * dim or raw_id not in tools or raw_id not in prior:
                raise IndexFormatError(f"{self._where}: incomplete record for tool {raw_id.decode()!r}")
            tool_id = raw_id.decode()
            matrix[i] = decode_vector(vec, dim, self._where, tool_id)
            entry = decode_json(prior[raw_id], self._where, f"prior for tool {tool_id!r}")
            if (
                not isinstance(entry, list)
                or len(entry) != 2
                or isinstance(entry[0], bool)
                or not isinstance(entry[0], (int, float))
                or not isinstance(entry[1], dict)
            ):
                raise IndexFormatError(f"{self._where}: damaged prior for tool {tool_id!r}")
            priors[i] = entry[0]
            details.append(entry[1])
        records = []
        for tool_id, raw_id in zip(ids, order, strict=True):  # validated when parsed (rated.stored_tool)
            try:
                records.append(tools[raw_id].decode())
            except UnicodeDecodeError:
                raise IndexFormatError(
                    f"{self._where}: damaged record for tool {tool_id!r}: not UTF-8 text"
                ) from None
        return StoredCatalog(ids, tuple(records), matrix, priors, tuple(details))

    def put_tools(
        self,
        ids: Sequence[str],
        records: Sequence[str],
        embeddings: np.ndarray,
        prior: np.ndarray,
        prior_detail: Sequence[Mapping[str, Any]] | None = None,
        *,
        new_only: bool = False,
        check_meta: Callable[[dict[str, Any]], None] | None = None,
        delete: Sequence[str] = (),
    ) -> int:
        emb, details = check_tool_rows(ids, records, embeddings, prior, prior_detail)
        delete = list(dict.fromkeys(delete).keys() - set(ids))
        order = self._k("order")

        def body(pipe: Any) -> Callable[[list[Any]], int]:
            if check_meta is not None:  # read under WATCH: a rebuild landing before EXEC re-runs this
                check_meta(decode_meta(pipe.get(self._k("meta")), self._where))

            def held(keys: list[str]) -> list[str]:
                return [k for k, s in zip(keys, pipe.zmscore(order, keys), strict=True) if s is not None]

            def not_ascii() -> list[str]:  # every id: read only for a new id that may have another spelling
                return [
                    raw.decode("utf-8", "replace") for raw in pipe.zrange(order, 0, -1) if not raw.isascii()
                ]

            # read under WATCH: of two writers adding one id (or two spellings of it), the second is refused
            refuse_clashes(ids, held, new_only=new_only, delete=delete, not_ascii=not_ascii)
            scores = pipe.zmscore(order, list(ids)) if ids else []
            if delete:
                kept = pipe.zcard(order) + len({i for i, s in zip(ids, scores, strict=True) if s is None})
                if kept <= sum(s is not None for s in pipe.zmscore(order, delete)):
                    raise LastToolError(f"{self._where}: cannot remove every tool: an index needs one")
            last = pipe.zrange(order, -1, -1, withscores=True)
            top = float(last[0][1]) if last else -1.0
            added = [tool_id for tool_id, score in zip(ids, scores, strict=True) if score is None]
            evidence: list[str] = []
            if delete or added:  # watched from here: evidence gathered meanwhile under these ids goes too;
                # a change replacing tools in place drops none, so evidence written meanwhile (a 404 report
                # about any tool) does not re-run it
                pipe.watch(self._k("evidence"))
                evidence = self._evidence_keys(pipe)
            pipe.multi()
            for i, tool_id in enumerate(ids):
                if scores[i] is None:
                    top += 1
                    pipe.zadd(order, {tool_id: top})
                self._queue_tool(pipe, tool_id, records[i], emb[i], float(prior[i]), details[i])
            if added:  # what a late writer left under an id not held (a feedback that found the tool
                # before another process removed it): a tool added under it starts with none
                self._queue_drop_learned(pipe, added, evidence)
            if delete:
                self._queue_delete(pipe, delete, evidence)
            pipe.incr(self._k("catver"))
            return _last_int

        watch = [order, self._k("meta")] if check_meta is not None else [order]
        return int(self._optimistic(watch, body))

    def delete_tools(self, ids: Sequence[str], *, keep_one: bool = False) -> int:
        ids = list(dict.fromkeys(ids))  # an id named twice must not count as two tools removed
        if not ids:
            return self.catalog_version()
        order = self._k("order")

        def body(pipe: Any) -> Callable[[list[Any]], int]:
            if keep_one and pipe.zcard(order) <= sum(s is not None for s in pipe.zmscore(order, list(ids))):
                raise LastToolError(f"{self._where}: cannot remove every tool: an index needs at least one")
            evidence = self._evidence_keys(pipe)
            pipe.multi()
            self._queue_delete(pipe, ids, evidence)
            pipe.incr(self._k("catver"))
            return _last_int

        # the evidence set watched: evidence a tool gathers meanwhile goes with it
        return int(self._optimistic([self._k("evidence")] + ([order] if keep_one else []), body))

    def _queue_delete(self, pipe: Any, ids: Sequence[str], evidence: Sequence[str]) -> None:
        """Queue the removal of tools, their states and their evidence (inside the caller's MULTI;
        ``evidence``: every evidence key, read under WATCH of the set holding them)."""
        pipe.zrem(self._k("order"), *ids)
        for name in ("tools", "emb", "prior"):
            pipe.hdel(self._k(name), *ids)
        self._queue_drop_learned(pipe, ids, evidence)  # a tool added again later starts with none

    def _queue_drop_learned(self, pipe: Any, ids: Sequence[str], evidence: Sequence[str]) -> None:
        """Queue the removal of the policy state and the evidence kept under ``ids`` (inside the caller's
        MULTI; ``evidence`` as for ``_queue_delete``), and of evidence older stores never listed in the
        set."""
        pipe.delete(*(self._k(f"s:{t}") for t in ids))
        pipe.zrem(self._k("changes"), *ids)
        gone = list(dict.fromkeys([*evidence_of(evidence, set(ids)), *_unlisted_evidence(ids)]))
        pipe.delete(*(self._k(f"e:{key}") for key in gone))
        pipe.srem(self._k("evidence"), *gone)

    def _evidence_keys(self, pipe: Any) -> list[str]:
        """Every evidence key (``update_evidence`` keeps them in a set), read on a watching pipeline."""
        return [raw.decode() for raw in pipe.smembers(self._k("evidence"))]

    def _queue_drop_evidence(self, pipe: Any, evidence: Sequence[str]) -> None:
        """Queue the removal of all evidence (inside the caller's MULTI)."""
        pipe.delete(self._k("evidence"), *(self._k(f"e:{key}") for key in evidence))

    def _every_evidence_key(self, pipe: Any) -> list[str]:
        """Every evidence key, read on a watching pipeline before MULTI: those listed in the set, and those
        of the catalog's tools that stores before the set never listed (no writer adds such keys now)."""
        ids = [raw.decode() for raw in pipe.zrange(self._k("order"), 0, -1)]
        return list(dict.fromkeys([*self._evidence_keys(pipe), *_unlisted_evidence(ids)]))

    def clear(self) -> None:
        def body(pipe: Any) -> Callable[[list[Any]], None]:
            names = pipe.zrange(self._k("changes"), 0, -1)  # watched: a state written meanwhile goes too
            evidence = self._every_evidence_key(pipe)  # the set watched too
            pipe.multi()
            self._queue_drop_evidence(pipe, evidence)
            pipe.delete(*(self._k(n) for n in ("order", "tools", "emb", "prior", "meta", "changes")))
            if names:
                pipe.delete(*(self._k(f"s:{n.decode()}") for n in names))
            pipe.incr(self._k("catver"))
            return lambda replies: None

        self._optimistic([self._k("changes"), self._k("evidence")], body)

    def replace_catalog(
        self,
        ids: Sequence[str],
        records: Sequence[str],
        embeddings: np.ndarray,
        prior: np.ndarray,
        prior_detail: Sequence[Mapping[str, Any]] | None,
        meta: Mapping[str, Any],
        *,
        expect_empty: bool = False,
    ) -> int:
        emb, details = check_tool_rows(ids, records, embeddings, prior, prior_detail)
        watched = [self._k("changes"), self._k("evidence")]
        watched += [self._k("order"), self._k("meta")] if expect_empty else []

        def body(pipe: Any) -> Callable[[list[Any]], int]:
            if expect_empty and (
                pipe.zcard(self._k("order")) or pipe.get(self._k("meta")) not in (None, b"{}")
            ):
                raise IndexExistsError(f"{self.url} ({self.namespace}) already holds an index")
            names = pipe.zrange(self._k("changes"), 0, -1)
            evidence = self._every_evidence_key(pipe)
            pipe.multi()  # one MULTI/EXEC: replicas see the old index or the new one
            self._queue_drop_evidence(pipe, evidence)
            pipe.delete(*(self._k(n) for n in ("order", "tools", "emb", "prior", "meta", "changes")))
            if names:
                pipe.delete(*(self._k(f"s:{n.decode()}") for n in names))
            pipe.set(self._k("meta"), json.dumps(dict(meta), sort_keys=True))
            for i, tool_id in enumerate(ids):
                pipe.zadd(self._k("order"), {tool_id: float(i)})
                self._queue_tool(pipe, tool_id, records[i], emb[i], float(prior[i]), details[i])
            pipe.incr(self._k("catver"))
            return _last_int

        return int(self._optimistic(watched, body))

    def _queue_tool(
        self, pipe: Any, tool_id: str, record: str, emb: np.ndarray, prior: float, detail: Mapping[str, Any]
    ) -> None:
        """Queue one tool's record, embedding and prior on a MULTI pipeline (its order is set apart)."""
        pipe.hset(self._k("tools"), tool_id, record)
        pipe.hset(self._k("emb"), tool_id, emb.tobytes())
        pipe.hset(self._k("prior"), tool_id, json.dumps([prior, dict(detail)]))

    def load_cached(self, name: str) -> bytes | None:
        raw = self._call(lambda: self._r.get(self._k(f"cached:{name}")))
        return None if raw is None else bytes(raw)

    def save_cached(self, name: str, data: bytes, *, catalog_version: int | None = None) -> bool:
        key, value = self._k(f"cached:{name}"), bytes(data)
        if catalog_version is None:
            self._call(lambda: self._r.set(key, value))
            return True
        return self._change_cached(lambda pipe: pipe.set(key, value), catalog_version)

    def delete_cached(self, name: str, *, catalog_version: int | None = None) -> bool:
        key = self._k(f"cached:{name}")
        if catalog_version is None:
            return bool(self._call(lambda: self._r.delete(key)))
        return self._change_cached(lambda pipe: pipe.delete(key), catalog_version)

    def _change_cached(self, queue: Callable[[Any], Any], catalog_version: int) -> bool:
        """Queue one cache write, applied only while the catalog version is ``catalog_version`` (watched:
        a catalog change landing before EXEC re-runs the check)."""
        catver = self._k("catver")

        def body(pipe: Any) -> Callable[[list[Any]], bool]:
            current = int(pipe.get(catver) or 0)
            pipe.multi()
            if current != catalog_version:
                return lambda replies: False
            queue(pipe)
            return lambda replies: bool(replies[-1])

        return bool(self._optimistic([catver], body))

    def catalog_version(self) -> int:
        return int(self._call(lambda: self._r.get(self._k("catver"))) or 0)

    # ---- policy state ------------------------------------------------------------------------------
    def load_states(self, keys: Iterable[str] | None = None) -> dict[str, bytes]:
        if keys is None:
            keys = [k.decode() for k in self._call(lambda: self._r.zrange(self._k("changes"), 0, -1))]
        keys = list(keys)
        if not keys:
            return {}
        values = self._call(lambda: self._r.mget([self._k(f"s:{k}") for k in keys]))
        return {k: v for k, v in zip(keys, values, strict=True) if v is not None}

    def update_states(
        self,
        keys: Sequence[str],
        update: Callable[[Mapping[str, bytes]], Mapping[str, bytes]],
        record: OutcomeRecord | None = None,
    ) -> None:
        keys = list(dict.fromkeys(keys))
        state_keys = [self._k(f"s:{k}") for k in keys]
        args = ["", "0", "", "", ""]  # no record: log nothing
        if record is not None:
            fields = [record.time, record.tool_id, record.outcome, record.query_hash, record.retry_after]
            args = [
                json.dumps(fields),
                str(self.max_outcomes or 0),
                record.tool_id,
                _SLOT_FIELDS[outcome_slot(record.outcome)],
                f"{float(record.time)!r} {record.outcome}",
            ]

        def body(pipe: Any) -> Callable[[list[Any]], None]:
            values = pipe.mget(state_keys) if state_keys else []
            current = {k: v for k, v in zip(keys, values, strict=True) if v is not None}
            new = dict(update(current))
            names = list(new)
            pipe.multi()
            self._commit(
                keys=[*self._fixed_keys, *(self._k(f"s:{n}") for n in names)],
                args=[len(names), *args, *(bytes(new[n]) for n in names), *names],
                client=pipe,
            )
            return lambda replies: None

        self._optimistic(state_keys, body)

    def states_since(self, seq: int) -> tuple[dict[str, bytes], int]:
        """Also every state, with the lower counter, when the counter is below ``seq``: the server was
        restored from an older copy, and changes numbered anew would otherwise be missed."""

        def read() -> list[Any]:
            pipe = self._r.pipeline(transaction=True)
            pipe.get(self._k("seq"))
            pipe.zrangebyscore(self._k("changes"), f"({int(seq)}", "+inf", withscores=True)
            return pipe.execute()

        counter, changed = self._call(read)
        if int(counter or 0) < int(seq):
            return self.load_states(), int(counter or 0)
        if not changed:
            return {}, int(seq)
        names = [m.decode() for m, _ in changed]
        return self.load_states(names), max(int(seq), *(int(s) for _, s in changed))

    def version(self) -> int:
        seq, catver = self._call(lambda: self._r.mget([self._k("seq"), self._k("catver")]))
        return (int(catver or 0) << 40) + int(seq or 0)

    # ---- evidence across calls (``EvidenceStore``): one string key ``NAMESPACE:e:KEY`` each, and the
    # set ``NAMESPACE:evidence`` of the KEYs, so that removing a tool finds its evidence ----------------
    def load_evidence(self, key: str) -> bytes | None:
        value = self._call(lambda: self._r.get(self._k(f"e:{key}")))
        return None if value is None else bytes(value)

    def load_evidence_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        """``load_evidence`` of many keys in one round trip (an MGET): those that have a blob."""
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        values = self._call(lambda: self._r.mget([self._k(f"e:{k}") for k in keys]))
        return {k: bytes(v) for k, v in zip(keys, values, strict=True) if v is not None}

    def update_evidence(self, key: str, update: Callable[[bytes | None], bytes | None]) -> None:
        name = self._k(f"e:{key}")

        def body(pipe: Any) -> Callable[[list[Any]], None]:
            old = pipe.get(name)  # watched: another writer's change in between re-runs this
            new = update(None if old is None else bytes(old))
            pipe.multi()
            if new is None:
                pipe.delete(name)
                pipe.srem(self._k("evidence"), key)
            else:
                pipe.set(name, bytes(new))
                pipe.sadd(self._k("evidence"), key)
            return lambda replies: None

        self._optimistic([name], body)

    # ---- outcome log -------------------------------------------------------------------------------
    def _log(self, start: int = 0) -> list[OutcomeRecord]:
        """The outcome log from index ``start`` (negative: that many from the end), oldest first."""
        return self._log_of(self._call(lambda: self._r.lrange(self._k("log"), start, -1)))

    def _log_of(self, raw: list[bytes]) -> list[OutcomeRecord]:
        return [self._log_record(r) for r in raw]

    def _log_record(self, raw: bytes) -> OutcomeRecord:
        fields = decode_json(raw, self._where, "outcome log entry")
        if not isinstance(fields, list) or not 3 <= len(fields) <= 5:
            raise IndexFormatError(f"{self._where}: damaged outcome log entry {raw[:80]!r}")
        return OutcomeRecord(*fields)

    def outcomes(self, tool_id: str | None = None, limit: int | None = 100) -> list[OutcomeRecord]:
        """The most recent ``limit`` records (all when None), oldest first."""
        if tool_id is None and limit is not None:
            if limit <= 0:
                return []
            return self._log(-int(limit))
        return recent_outcomes(self._log(), tool_id, limit)

    def outcome_stats(self, tool_ids: Sequence[str] | None = None) -> dict[str, OutcomeStats]:
        """From the per-tool counters (exact, whatever ``max_outcomes`` trimmed from the log)."""
        if tool_ids is None:
            raw = self._call(lambda: self._r.hgetall(self._k("ostats")))
            fields = {k.decode(): v for k, v in raw.items()}
        else:
            ids = list(dict.fromkeys(tool_ids))
            if not ids:
                return {}
            names = [f"{p}:{t}" for t in ids for p in (*_SLOT_FIELDS, "l")]
            values = self._call(lambda: self._r.hmget(self._k("ostats"), names))
            fields = {n: v for n, v in zip(names, values, strict=True) if v is not None}
        rows: dict[str, list[Any]] = {}
        for name, value in fields.items():
            prefix, _, tool_id = name.partition(":")
            row = rows.setdefault(tool_id, [0, 0, 0, None, None])
            if prefix == "l":
                when, _, outcome = value.decode().partition(" ")
                row[3], row[4] = outcome, float(when)
            elif prefix in _SLOT_FIELDS:
                row[_SLOT_FIELDS.index(prefix)] = int(value)
        return {t: OutcomeStats(t, *row) for t, row in rows.items()}

    def close(self) -> None:
        self._call(self._r.close)

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, namespace={self.namespace!r})"


def _unlisted_evidence(tool_ids: Iterable[str]) -> list[str]:
    """The evidence keys of ``tool_ids`` that stores before the set ``NAMESPACE:evidence`` held unlisted."""
    return [f"{kind}:{tool_id}" for tool_id in tool_ids for kind in _UNLISTED_EVIDENCE]


def _last_int(replies: list[Any]) -> int:
    """The last reply of a transaction as an int (the new catalog version)."""
    return int(replies[-1])
