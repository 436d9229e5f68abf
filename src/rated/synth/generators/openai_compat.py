"""Generator for any OpenAI-compatible chat endpoint (Ollama, vLLM, LM Studio, llama.cpp server, hosted APIs).

Requests run in a bounded thread pool. Transient failures (timeouts, connection errors, 408/409/425/429 and
5xx) are retried with exponential backoff and full jitter, never sooner than a ``Retry-After`` header asks.
Errors that no retry can fix (401/403/404: a wrong key, model or URL) raise ``ConfigError`` at once.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import httpx

from rated.errors import ConfigError
from rated.synth.generators.base import Job, answered, completion_text, failed
from rated.synth.records import Generation

__all__ = ["ENV_API_KEY", "ENV_BASE_URL", "ENV_MODEL", "OpenAICompatGenerator"]

ENV_BASE_URL = "RATED_SYNTH_BASE_URL"
ENV_MODEL = "RATED_SYNTH_MODEL"
ENV_API_KEY = "RATED_SYNTH_API_KEY"

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_FATAL_STATUS = frozenset({401, 403, 404})


class _Fatal(Exception):
    pass


class OpenAICompatGenerator:
    """Chat-completions client; options fall back to ``RATED_SYNTH_BASE_URL``, ``_MODEL`` and ``_API_KEY``.

    ``base_url`` is the API root that ``/chat/completions`` is appended to (e.g. ``http://localhost:11434/v1``).
    ``transport`` and ``sleep`` exist for tests (an ``httpx`` transport, a fake clock).
    """

    name = "openai"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        concurrency: int = 4,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        temperature: float = 0.8,
        max_tokens: int = 1500,
        seed: int = 0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.base_url = (base_url or os.environ.get(ENV_BASE_URL) or "").rstrip("/")
        self.model = model or os.environ.get(ENV_MODEL) or ""
        if not self.base_url:
            raise ConfigError(
                f"no endpoint: pass --base-url or set {ENV_BASE_URL} (e.g. http://localhost:11434/v1)"
            )
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base URL must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise ConfigError(f"no model: pass --model or set {ENV_MODEL}")
        if concurrency < 1 or max_retries < 0 or timeout <= 0:
            raise ConfigError("concurrency must be >= 1, max_retries >= 0 and timeout > 0")
        self._api_key = api_key or os.environ.get(ENV_API_KEY) or ""
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self._transport = transport
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        with self._rng_lock:
            delay = self._rng.uniform(0.0, min(self.max_backoff, self.backoff * 2.0**attempt))
        return max(delay, retry_after or 0.0)

    @staticmethod
    def _retry_after(resp: httpx.Response) -> float | None:
        value = resp.headers.get("retry-after")
        try:
            return min(float(value), 300.0) if value is not None else None
        except ValueError:
            return None

    def _payload(self, job: Job) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": list(job.messages),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }

    def _run(self, client: httpx.Client, job: Job) -> Generation:
        start = time.perf_counter()
        last = ""
        for attempt in range(self.max_retries + 1):
            retry_after = None
            try:
                resp = client.post("/chat/completions", json=self._payload(job))
            except httpx.HTTPError as exc:  # timeouts, refused connections, protocol errors
                last = f"{type(exc).__name__}: {exc}"
            else:
                if resp.status_code in _FATAL_STATUS:
                    raise _Fatal(f"{self.base_url} answered {resp.status_code}: {resp.text[:200]}")
                if resp.status_code == 200:
                    try:
                        text = completion_text(resp.json())
                    except (ValueError, KeyError, IndexError, TypeError):
                        last = f"malformed response: {resp.text[:200]}"
                    else:
                        meta = {"generator": self.name, "model": self.model, "attempts": attempt + 1}
                        return answered(job, text, start, **meta)
                elif resp.status_code not in _RETRY_STATUS:
                    return Generation(job.tool_id, error=f"HTTP {resp.status_code}: {resp.text[:200]}")
                else:
                    last = f"HTTP {resp.status_code}"
                    retry_after = self._retry_after(resp)
            if attempt < self.max_retries:
                self._sleep(self._delay(attempt, retry_after))
        return failed(job, f"gave up after {self.max_retries + 1} attempts: {last}", start)

    def _client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        return httpx.Client(
            base_url=self.base_url, headers=headers, timeout=self.timeout, transport=self._transport
        )

    def generate(self, jobs: Sequence[Job]) -> Iterator[Generation]:
        """Yield one ``Generation`` per job as each completes; at most ``concurrency`` in flight."""
        if not jobs:
            return
        with self._client() as client, ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            pending: set[Future[Generation]] = set()
            queue = iter(jobs)
            try:
                for job in queue:
                    pending.add(pool.submit(self._run, client, job))
                    if len(pending) >= self.concurrency:
                        break
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        try:
                            yield fut.result()
                        except _Fatal as exc:
                            raise ConfigError(str(exc)) from None
                        nxt = next(queue, None)
                        if nxt is not None:
                            pending.add(pool.submit(self._run, client, nxt))
            finally:
                for fut in pending:
                    fut.cancel()
