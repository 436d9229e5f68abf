"""What showing the retired-endpoint rule's state (``rated.retired.with_status``) costs ``GET /tools``: store
calls, SQL statements or Redis commands, and time per request, against a revision from before it, in one run.

The catalog: ``--tools`` synthetic tools (the ``hash`` encoder), in SQLite (``--store sqlite``) or in a
redis-server of the benchmark's own (``--store redis``: the binary on PATH, no persistence). Two histories:

- ``no outcomes``: a catalog just indexed;
- ``caller errors``: every tool's last logged outcome a caller error (a 400 reported without a query,
  which leaves no evidence), and every tenth tool with a run of 404s from three different queries (its
  evidence in the store): what a busy catalog looks like, where most tools have had a bad argument.

Each revision runs in its own process (``--before REV``: ``src/`` of that revision from ``git archive``;
``--after REV`` likewise, or this working tree without it; the stores are built with the latter), on the
same stores, alternated over ``--rounds``: ``GET /tools`` through the app's test client, once to warm up,
once counted (calls of the store's public methods; statements on the SQLite connection, or Redis commands
from the server's ``INFO stats``), then ``--requests`` timed. Printed: per history, the counts of each
revision and their ratio, and the median ms and their ratio.

Run: ``.venv/bin/python benchmarks/retired_status_cost.py [--tools 20000] [--store sqlite|redis]
[--before 2dd1d6b^] [--after REV] [--rounds 3] [--requests 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HISTORIES = ("no outcomes", "caller errors")


# ---- the stores ---------------------------------------------------------------------------------------
def build(db: str, tools: int, history: str) -> None:
    """Index ``tools`` synthetic tools into ``db`` and log ``history`` (with the ``after`` revision)."""
    from rated import Tool
    from rated.encode.testing import HashEncoder
    from rated.outcome import Outcome, OutcomeKind
    from rated.retriever import Retriever

    catalog = [
        Tool(id=f"tool.{i}", name=f"tool_{i}", description=f"Tool number {i} does thing {i % 97}")
        for i in range(tools)
    ]
    r = Retriever.from_catalog(catalog, encoder=HashEncoder(64), db=db, overwrite=True)
    try:
        if history == "caller errors":
            gone = Outcome(OutcomeKind.CALLER_ERROR, None, 404)
            for i, tool in enumerate(catalog):
                if i % 10 == 0:
                    for who in ("Ada", "Bob", "Cy"):
                        r.feedback(tool.id, gone, query=f"call {tool.id} for {who}")
                r.feedback(tool.id, Outcome(OutcomeKind.CALLER_ERROR, None, 400))
    finally:
        r.close()


def start_redis(workdir: Path) -> tuple[subprocess.Popen, str]:
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("--store redis needs redis-server on PATH")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir), "--save", ""]
    proc = subprocess.Popen([*cmd, "--appendonly", "no"], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                sys.exit("redis-server did not start")
            time.sleep(0.02)


# ---- one revision, in its own process -----------------------------------------------------------------
def measure(db: str, requests: int) -> dict[str, object]:
    """``GET /tools`` on ``db`` with the rated this process imports: counts of one request, times of more."""
    from fastapi.testclient import TestClient

    from rated.retriever import Retriever
    from rated.service import Settings, create_app

    r = Retriever.open(db)
    calls: Counter[str] = Counter()
    store = r.store
    for name in dir(type(store)):
        method = getattr(store, name)
        if name.startswith("_") or not callable(method):
            continue

        def counted(*args, _name=name, _method=method, **kwargs):
            calls[_name] += 1
            return _method(*args, **kwargs)

        setattr(store, name, counted)  # on the instance: the class (and other stores) unchanged
    statements = [0]
    conn = getattr(store, "_conn", None)
    if conn is not None:
        conn.set_trace_callback(lambda _sql: statements.__setitem__(0, statements[0] + 1))
    raw = None
    if db.startswith("redis://"):
        import redis

        raw = redis.Redis.from_url(db.partition("?")[0])  # without rated_namespace (rated's own)
    try:
        with TestClient(create_app(Settings(), retriever=r)) as client:
            assert client.get("/tools").status_code == 200  # warm: the index loaded, states read
            calls.clear()
            statements[0] = 0
            before = None if raw is None else int(raw.info("stats")["total_commands_processed"])
            answer = client.get("/tools")
            commands = (
                None if raw is None else int(raw.info("stats")["total_commands_processed"]) - before - 1
            )
            assert answer.status_code == 200, answer.text
            listed = answer.json()
            with_run = sum("retired" in row for row in listed["data"])
            counts = dict(calls)
            times = []
            for _ in range(requests):
                start = time.perf_counter()
                assert client.get("/tools").status_code == 200
                times.append((time.perf_counter() - start) * 1e3)
    finally:
        r.close()
        if raw is not None:
            raw.close()
    return {
        "store_calls": sum(counts.values()),
        "by_method": counts,
        "statements": statements[0] if conn is not None else None,
        "redis_commands": commands,
        "listed": listed["count"],
        "with_run": with_run,
        "ms": statistics.median(times),
    }


def _commands(raw: Any) -> int:
    return int(raw.info("stats")["total_commands_processed"])


def run_in(src: Path, call: str) -> object:
    """``call`` (an expression on this module, ``b``) in a process importing rated from ``src``: its JSON."""
    env = {**os.environ, "PYTHONPATH": str(src)}  # before the editable install's path entry
    here = str(Path(__file__).parent)
    code = f"import json, sys; sys.path.insert(0, {here!r}); import retired_status_cost as b"
    out = subprocess.run(
        [sys.executable, "-c", f"{code}; print(json.dumps({call}))"], env=env, capture_output=True, text=True
    )
    if out.returncode != 0:
        sys.exit(f"{call} with {src} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def source_of(rev: str, into: Path) -> Path:
    """``src/`` of git revision ``rev``, extracted in the new folder ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src"], capture_output=True, check=True
    ).stdout
    into.mkdir()
    path = into / "archive.tar"
    path.write_bytes(archive)
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def short(rev: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    ).stdout.strip()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", type=int, default=20_000)
    ap.add_argument("--store", choices=("sqlite", "redis"), default="sqlite")
    ap.add_argument("--before", default="2dd1d6b^", metavar="REV")
    ap.add_argument("--after", metavar="REV", help="default: this working tree")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        revisions = {f"before ({short(args.before)})": source_of(args.before, work / "before")}
        if args.after is None:
            revisions["after"] = ROOT / "src"
        else:
            revisions[f"after ({short(args.after)})"] = source_of(args.after, work / "after")
        after = list(revisions)[-1]
        server = None
        if args.store == "redis":
            server, url = start_redis(work)
        try:
            dbs = {}
            for n, history in enumerate(HISTORIES):
                dbs[history] = (
                    f"{url}?rated_namespace=h{n}" if args.store == "redis" else str(work / f"h{n}.db")
                )
                started = time.perf_counter()
                run_in(revisions[after], f"b.build({dbs[history]!r}, {args.tools}, {history!r})")
                print(
                    f"built {history!r}: {args.tools} tools in {time.perf_counter() - started:.1f} s",
                    flush=True,
                )
            results: dict[tuple[str, str], list[dict[str, object]]] = {}
            for _ in range(args.rounds):  # alternated: load on the machine falls on both alike
                for history, db in dbs.items():
                    for name, src in revisions.items():
                        results.setdefault((history, name), []).append(
                            run_in(src, f"b.measure({db!r}, {args.requests})")
                        )
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=10)
    unit = "SQL statements" if args.store == "sqlite" else "Redis commands"
    field = "statements" if args.store == "sqlite" else "redis_commands"
    print(f"GET /tools, {args.tools} tools, {args.store}, {args.rounds} rounds x {args.requests} requests")
    for history in HISTORIES:
        (b_name, before), (a_name, after) = [(n, results[(history, n)]) for n in revisions]
        b, a = before[-1], after[-1]  # counts: the same every round
        b_ms = statistics.median(x["ms"] for x in before)
        a_ms = statistics.median(x["ms"] for x in after)
        print(f"- {history} ({a['with_run']} tools listed with a run):")
        for label, key in (("store calls", "store_calls"), (unit, field)):
            ratio = f"{a[key] / b[key]:.1f}x" if b[key] else "-"
            print(f"    {label}: {b_name} {b[key]}, {a_name} {a[key]} ({ratio})")
        print(f"    store calls by method: {b_name} {b['by_method']}, {a_name} {a['by_method']}")
        print(f"    median ms: {b_name} {b_ms:.1f}, {a_name} {a_ms:.1f} ({a_ms / b_ms:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
