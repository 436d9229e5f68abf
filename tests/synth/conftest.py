"""A fake OpenAI-compatible chat server on 127.0.0.1 (random port), run in a thread: no network in tests."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class FakeChatServer:
    """Answers /v1/chat/completions with numbered queries about the tool named in the prompt.

    ``fail_first[tool_name] = (n, status)`` makes the first ``n`` requests for that tool answer ``status``;
    ``status_always`` forces one status for everything (401 for a bad key, for instance).
    """

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.fail_first: dict[str, tuple[int, int]] = {}
        self.status_always: int | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = server.answer(self.path, dict(self.headers), body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def answer(self, path: str, headers: dict, body: dict) -> tuple[int, dict]:
        import time

        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.requests.append(body)
            self.headers.append(headers)
        try:
            time.sleep(0.02)  # let concurrent requests overlap
            if path != "/v1/chat/completions":
                return 404, {"error": "not found"}
            if self.status_always is not None:
                return self.status_always, {"error": "forced"}
            user = body["messages"][-1]["content"]
            name = re.search(r"Tool name: (\S+)", user).group(1)
            with self._lock:
                self._seen[name] += 1
                seen = self._seen[name]
            n_fail, status = self.fail_first.get(name, (0, 200))
            if seen <= n_fail:
                return status, {"error": "transient"}
            n = int(re.search(r"Write (\d+) different", user).group(1))
            lines = [
                f"{i + 1}. I need help with {name} to handle item{i}, thing{i} and part{i}" for i in range(n)
            ]
            # a near-duplicate of the first query, which the Jaccard filter must drop
            lines.append(f"{n + 1}. I need help with {name} to handle item0, thing0 and part0 please")
            return 200, {"choices": [{"message": {"role": "assistant", "content": "\n".join(lines)}}]}
        finally:
            with self._lock:
                self.in_flight -= 1

    def __enter__(self) -> FakeChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def chat_server() -> Iterator[FakeChatServer]:
    with FakeChatServer() as server:
        yield server
