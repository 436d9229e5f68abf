"""The embedded encoder: a prepared BERT sentence encoder run on the CPU (no torch).

The graph runs on onnxruntime, or (opt-in) on OpenVINO in bfloat16 (:mod:`rated.encode.runtime`).

Texts are tokenised with the model's own ``tokenizer.json`` (``tokenizers``), truncated to the model's
``max_seq_length`` as sentence-transformers does (the words past it do not count), sorted by length and
batched so that padding stays small; the graph does mean pooling and L2 normalisation, so the output rows
are unit-norm float32. A very long text is tokenised only as far as the model reads it (tokenizers would
otherwise split the whole text into windows that are thrown away: time and memory growing with its size),
and lone surrogates (valid in JSON, rejected by tokenizers) become U+FFFD.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rated.encode.manifest import read_manifest, verify_model_dir
from rated.encode.runtime import GraphRunner, open_runner, resolve_backend
from rated.errors import ModelError

__all__ = ["ENCODER_THREADS_ENV", "MAX_BATCH_TOKENS", "OnnxEncoder", "default_threads"]

ENCODER_THREADS_ENV = "RATED_ENCODER_THREADS"
_MAX_DEFAULT_THREADS = 4
MAX_BATCH_TOKENS = 512
# A text is first tokenised up to the last space within this many characters per token the model reads:
# real text averages 4-6 characters per token, so the prefix almost always holds enough of them.
_CHARS_PER_TOKEN = 16
_LAST_BREAK = re.compile(r"[ \t\n][^ \t\n]*\Z")


def default_threads() -> int:
    """``$RATED_ENCODER_THREADS``, else the usable CPUs, at most 4 (more barely help a small model)."""
    env = os.environ.get(ENCODER_THREADS_ENV)
    if env:
        try:
            threads = int(env)
        except ValueError:
            threads = 0
        if threads < 1:  # 0 or a negative count is a mistake, not "as few as possible"
            raise ModelError(f"{ENCODER_THREADS_ENV} must be a positive integer, got {env!r}")
        return threads
    return max(1, min(usable_cpus(), _MAX_DEFAULT_THREADS))


def usable_cpus() -> int:
    """The CPUs this process may run on (a container's or taskset's cpuset), not the machine's count:
    threads beyond it only contend (``os.process_cpu_count`` from Python 3.13)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity on this platform
        return os.cpu_count() or 1


class OnnxEncoder:
    """Sentence encoder over an ONNX BERT graph; implements ``Encoder`` (symmetric: same model both sides).

    Build with :meth:`load`. ``name`` is the model name, ``dim`` the embedding size, ``fingerprint`` a short
    hash of the weights (embeddings from encoders with different fingerprints are not comparable).
    """

    def __init__(
        self,
        runner: GraphRunner,
        tokenizer: Any,
        *,
        name: str,
        dim: int,
        max_length: int,
        fingerprint: str = "",
        model_dir: Path | None = None,
    ):
        self._runner = runner
        self.backend = runner.backend
        self.precision = runner.precision
        self._tokenizer = tokenizer
        self.name = name
        self.dim = int(dim)
        self.max_length = int(max_length)
        self.fingerprint = fingerprint
        self.model_dir = model_dir
        self.max_tokens = MAX_BATCH_TOKENS

    @classmethod
    def load(
        cls,
        model_dir: str | Path,
        *,
        threads: int | None = None,
        quantized: bool = False,
        verify: bool = True,
        backend: str | None = None,
    ) -> OnnxEncoder:
        """Open a model folder written by :mod:`rated.encode.prepare`.

        Raises IndexFormatError if the folder was written by another format version and ModelError if it is
        incomplete or damaged. ``quantized=True`` uses an int8 copy of the graph (built on first use): about
        3x faster for single queries, at a small cost in agreement with the float model. ``backend``
        (default ``$RATED_ENCODER_BACKEND``, else onnxruntime) picks the runtime: :mod:`rated.encode.runtime`.
        """
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        manifest = verify_model_dir(model_dir) if verify else read_manifest(model_dir)
        float_path = model_dir / manifest.get("onnx", {}).get("file", "model.onnx")
        resolve_backend(backend, quantized=quantized)  # a bad setting fails before any work
        onnx_path = float_path
        if quantized:
            from rated.encode.quantize import quantized_model_path

            onnx_path = quantized_model_path(model_dir, float_path)
        try:
            tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except Exception as exc:  # tokenizers raises a bare Exception
            _name_the_damage(model_dir, verify)
            raise ModelError(f"cannot load {model_dir / 'tokenizer.json'}: {exc}") from None
        max_length = int(manifest["max_seq_length"])
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.no_padding()  # we pad per batch, after sorting by length
        sha = manifest["files"].get("model.safetensors", {}).get("sha256", "")
        name = str(manifest.get("name", model_dir.name)) + ("-int8" if quantized else "")
        threads = threads or default_threads()
        try:
            runner = open_runner(model_dir, onnx_path, threads, backend, quantized=quantized)
        except ModelError:
            _name_the_damage(model_dir, verify)
            if not quantized:
                raise
            # the float graph is whole, so the damaged file is its int8 copy: derived, so build it again
            onnx_path = quantized_model_path(model_dir, float_path, rebuild=True)
            runner = open_runner(model_dir, onnx_path, threads, backend, quantized=quantized)
        return cls(
            runner,
            tokenizer,
            name=name,
            dim=int(manifest["dim"]),
            max_length=max_length,
            fingerprint=sha[:16] + ("-int8" if quantized else ""),
            model_dir=model_dir,
        )

    def encode_queries(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        """Encode queries (same model as tools)."""
        return self.encode(texts, batch_size=batch_size, progress=progress)

    def encode_tools(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        """Encode tool texts (same model as queries)."""
        return self.encode(texts, batch_size=batch_size, progress=progress)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Return a ``(len(texts), dim)`` float32 array of unit-norm rows, in input order.

        Texts are sorted by token count and batched by at most ``batch_size`` texts and ``max_tokens``
        padded tokens, so a batch holds texts of similar length.
        """
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1:  # the latency-critical path: no sorting, no padding
            ids = np.asarray([self._tokenize(texts)[0].ids], dtype=np.int64)
            return self._runner.run(ids, np.ones_like(ids))
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        encodings = self._tokenize(texts)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        batches = _token_batches(lengths[order], order, batch_size, self.max_tokens)
        for batch in _progress(batches, len(texts), enabled=progress, label=f"encoding with {self.name}"):
            width = int(lengths[batch[-1]])
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, idx in enumerate(batch):
                n = int(lengths[idx])
                ids[row, :n] = encodings[idx].ids
                mask[row, :n] = 1
            out[batch] = self._runner.run(ids, mask)
        return out

    def _tokenize(self, texts: list[str]) -> list[Any]:
        """Truncated encodings of ``texts``, tokenising a long text only as far as the model reads it.

        A prefix cut at a space, tab or newline tokenises like the start of the whole text, so when the
        prefix alone fills ``max_length`` tokens the truncated result is the same; otherwise (a prefix of
        mostly spaces, or of text without spaces) the whole text is tokenised.
        """
        limit = self.max_length * _CHARS_PER_TOKEN
        heads = [_head(text, limit) for text in texts]
        encode = self._tokenizer.encode if len(texts) == 1 else None
        encodings = [encode(heads[0])] if encode else self._tokenizer.encode_batch(heads)
        short = [
            i for i, e in enumerate(encodings) if heads[i] is not texts[i] and len(e.ids) < self.max_length
        ]
        if short:
            for i, e in zip(short, self._tokenizer.encode_batch([texts[i] for i in short]), strict=True):
                encodings[i] = e
        return encodings

    def __repr__(self) -> str:
        fields = f"name={self.name!r}, dim={self.dim}, backend={self.backend!r}"
        return f"OnnxEncoder({fields}, model_dir={str(self.model_dir)!r})"


def _token_batches(sorted_lengths: np.ndarray, order: np.ndarray, max_texts: int, max_tokens: int) -> list:
    """Split length-sorted positions into batches of at most ``max_texts`` texts and ``max_tokens`` padded
    tokens (at least one text each). Small batches keep activations in cache: measured 2x faster than
    fixed batches of 64 long texts on a 2-core machine."""
    batches, start, n = [], 0, len(order)
    while start < n:
        stop = start + 1
        while (
            stop < n and stop - start < max_texts and (stop - start + 1) * sorted_lengths[stop] <= max_tokens
        ):
            stop += 1
        batches.append(order[start:stop])
        start = stop
    return batches


def _name_the_damage(model_dir: Path, verify: bool) -> None:
    """After a file failed to load: raise the ModelError naming the damaged file, if the hashes find one."""
    if verify:
        verify_model_dir(model_dir, deep=True)


def _head(text: str, limit: int) -> str:
    """``text`` itself when short, else its start up to the last space, tab or newline before ``limit``."""
    if len(text) <= limit:
        return text
    match = _LAST_BREAK.search(text, 0, limit)
    return text[: match.start()] if match else text


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("encode_* expects a sequence of strings, not a single string")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")
        if not text.isascii():
            out[i] = _without_lone_surrogates(text)
    return out


def _without_lone_surrogates(text: str) -> str:
    """Join surrogate pairs and replace lone surrogates (which tokenizers rejects) with U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def _progress(batches: list[np.ndarray], total: int, *, enabled: bool, label: str) -> Iterator[np.ndarray]:
    """Yield batches, with a rich progress bar (counting texts) when enabled and worth showing."""
    if not enabled or len(batches) < 2:
        yield from batches
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task(label, total=total)
        for batch in batches:
            yield batch
            bar.advance(task, len(batch))
