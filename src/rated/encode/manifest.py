"""The ``manifest.json`` that marks a model folder as complete, and checks that a folder still matches it.

A model folder is only renamed into place after its manifest is written, so a folder with a valid manifest
is a whole model; the manifest records each file's size and sha256 so damage can be detected.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rated.errors import IndexFormatError, ModelError

__all__ = [
    "MANIFEST_NAME",
    "MODEL_FORMAT_VERSION",
    "SMALL_FILE_BYTES",
    "damaged",
    "file_sha256",
    "read_manifest",
    "verify_model_dir",
    "write_manifest",
]

MANIFEST_NAME = "manifest.json"
MODEL_FORMAT_VERSION = 1
# Files up to this size (tokenizer, vocabulary, configs) are hashed on every check: about a millisecond,
# and a same-size edit of the tokenizer would otherwise give wrong embeddings without any error.
SMALL_FILE_BYTES = 4 << 20


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(model_dir: Path, fields: dict[str, Any]) -> dict[str, Any]:
    """Hash every file under ``model_dir`` and write the manifest (last, so it marks completion)."""
    files = {
        p.relative_to(model_dir).as_posix(): {"size": p.stat().st_size, "sha256": file_sha256(p)}
        for p in sorted(model_dir.rglob("*"))
        if p.is_file() and p.name != MANIFEST_NAME
    }
    manifest = {"format_version": MODEL_FORMAT_VERSION, **fields, "files": files}
    tmp = model_dir / (MANIFEST_NAME + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(model_dir / MANIFEST_NAME)
    return manifest


def read_manifest(model_dir: str | Path) -> dict[str, Any]:
    """Read and version-check a model folder's manifest.

    Raises ModelError when there is no readable manifest and IndexFormatError when it was written by another
    format version (re-prepare the model).
    """
    path = Path(model_dir) / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"{model_dir}: not a prepared model folder (no {MANIFEST_NAME})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(f"{path}: unreadable model manifest: {exc}") from None
    if not isinstance(manifest, dict) or "format_version" not in manifest:
        raise ModelError(f"{path}: model manifest has no format_version")
    if manifest["format_version"] != MODEL_FORMAT_VERSION:
        raise IndexFormatError(
            f"{path}: model folder format version {manifest['format_version']!r}, this rated reads "
            f"version {MODEL_FORMAT_VERSION}; delete the folder and prepare the model again"
        )
    for key in ("dim", "max_seq_length", "files"):
        if key not in manifest:
            raise ModelError(f"{path}: model manifest lacks {key!r}")
    return manifest


def verify_model_dir(model_dir: str | Path, *, deep: bool = False) -> dict[str, Any]:
    """Check that every file in the manifest is present with its size and, for files up to
    ``SMALL_FILE_BYTES`` (all files when ``deep``), its sha256.

    Returns the manifest; raises ModelError naming the first damaged file and what to do about it.
    """
    model_dir = Path(model_dir)
    manifest = read_manifest(model_dir)
    for rel, meta in manifest["files"].items():
        path = model_dir / rel
        if not path.is_file():
            raise ModelError(damaged(model_dir, f"model file {rel} is missing"))
        size = path.stat().st_size
        if size != meta["size"]:
            raise ModelError(damaged(model_dir, f"model file {rel} has size {size}, expected {meta['size']}"))
        if (deep or size <= SMALL_FILE_BYTES) and file_sha256(path) != meta["sha256"]:
            raise ModelError(
                damaged(model_dir, f"model file {rel} does not match its sha256 in the manifest")
            )
    return manifest


def damaged(model_dir: Path, detail: str) -> str:
    """The message for a damaged model folder: what is wrong and what to do."""
    return (
        f"{model_dir}: {detail}; the folder is damaged: delete it and prepare the model again "
        "(the default encoder prepares it again by itself on next use)"
    )
