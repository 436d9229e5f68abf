"""Requests per second of ``rated serve --workers N`` over one index, every worker count measured in one run.

Each setting starts a real server on a free port, waits for it, then ``--clients`` threads send
``POST /retrieve`` (k=5) for ``--seconds``, each request on a fresh connection (so the kernel spreads them
over the workers) and with a query never sent before (so the query cache never skips the encoder, the
part that more processes parallelise). The server is stopped with SIGTERM before the next setting.
The load generator runs on the same machine: on a few cores it takes a share of them.

Run: ``.venv/bin/rated index CATALOG --db DB`` (real encoder), then
``.venv/bin/python benchmarks/serve_workers.py DB --workers 1,2,1,2 [--seconds 10] [--clients 4]``.
Prints one JSON list of ``[workers, requests/s]`` in the order measured.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

__all__ = ["main"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(port: int, path: str, body: dict) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _wait_ready(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if _post(port, "/retrieve", {"query": "warm-up", "k": 1}) == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("the server did not answer in time")


def measure(db: str, workers: int, seconds: float, clients: int) -> float:
    """Requests per second of one server with ``workers`` processes."""
    port = _free_port()
    cmd = [sys.executable, "-m", "rated.cli", "serve", "--db", db, "--port", str(port)]
    cmd += ["--workers", str(workers), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_ready(port, proc)
        time.sleep(3 if workers > 1 else 0.5)  # one worker answered: let the others start
        done = [0] * clients
        failures: list[str] = []
        stop = time.monotonic() + seconds

        def client(c: int) -> None:
            while time.monotonic() < stop and not failures:
                query = f"send message {c} number {done[c]} to the team"
                try:
                    status = _post(port, "/retrieve", {"query": query, "k": 5})
                except OSError as exc:
                    status = f"{type(exc).__name__}: {exc}"
                if status != 200:  # a failed request must void the figure, not quietly lower it
                    failures.append(f"retrieve {query!r} answered {status}")
                    return
                done[c] += 1

        threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            raise SystemExit(f"{workers} worker(s): {failures[0]} ({len(failures)} client(s) failed)")
        return sum(done) / (time.monotonic() - start)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server's own group: parent and workers
        proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", help="an index built by `rated index`")
    parser.add_argument("--workers", default="1,2", help="worker counts, in the order to measure")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    print(json.dumps([[w, round(measure(args.db, w, args.seconds, args.clients), 1)] for w in counts]))


if __name__ == "__main__":
    main()
