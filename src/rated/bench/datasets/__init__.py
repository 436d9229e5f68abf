"""Loaders that turn public tool-retrieval benchmarks into the generic ``Dataset`` format.

``prepare(name, out, distractors=None)`` converts, optionally adds an external catalog as distractors,
validates and writes the folder, whole or not at all (``tools.jsonl``, ``queries.jsonl``, ``meta.json``,
``irrelevance.jsonl`` where the benchmark has queries with no correct tool, ``problems.txt`` listing what
was left out).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rated.bench.dataset import save_dataset
from rated.bench.datasets.bfcl import load_bfcl
from rated.bench.datasets.common import Prepared, add_distractors, write_jsonl
from rated.bench.datasets.metatool import load_metatool
from rated.bench.datasets.stabletoolbench import load_stabletoolbench
from rated.errors import DataError, RatedError
from rated.paths import atomic_dir

__all__ = ["LOADERS", "OUTPUT_FILES", "Prepared", "load", "prepare"]

# what ``prepare`` writes into its folder (irrelevance.jsonl only for benchmarks that have such queries)
OUTPUT_FILES = ("tools.jsonl", "queries.jsonl", "meta.json", "irrelevance.jsonl", "problems.txt")

LOADERS: dict[str, Callable[[], Prepared]] = {
    "bfcl": load_bfcl,
    "stabletoolbench": lambda: load_stabletoolbench("api"),
    "stabletoolbench-tool": lambda: load_stabletoolbench("tool"),
    "metatool": load_metatool,
}


def load(name: str, distractors: str | Path | None = None) -> Prepared:
    """Convert benchmark ``name`` in memory; ``distractors`` is a catalog file whose tools join the pool."""
    if name not in LOADERS:
        raise DataError(f"unknown benchmark {name!r}; expected one of {', '.join(LOADERS)}")
    prepared = LOADERS[name]()
    if distractors is not None:
        from rated.catalog.loaders import load_catalog

        extra = load_catalog(distractors)
        prepared.dataset = add_distractors(prepared.dataset, extra, prepared.problems)
        prepared.dataset.meta["distractors"] = str(distractors)
    prepared.dataset.validate()
    return prepared


def prepare(name: str, out: str | Path, distractors: str | Path | None = None) -> Prepared:
    """Convert benchmark ``name`` and write it to ``out``, all or nothing.

    The folder is built next to ``out`` and swapped in only when every file is written (``atomic_dir``):
    a failure or Ctrl-C midway leaves the previous ``out`` exactly as it was and no partial folder.
    ``out`` is replaced whole, so a folder holding files that ``prepare`` does not write is refused
    (``DataError``) before anything is converted. A failed write is a ``RatedError`` naming the file.
    """
    out = Path(out)
    _check_replaceable(out)
    prepared = load(name, distractors)
    prepared.dataset.meta["n_problems"] = len(prepared.problems)
    try:
        with atomic_dir(out) as building:
            _write(prepared, building)
    except OSError as exc:
        where = _shown(Path(exc.filename) if exc.filename else out, out)
        raise RatedError(f"cannot write {where}: {exc.strerror or exc} ({out} was left as it was)") from None
    return prepared


def _shown(path: Path, out: Path) -> Path:
    """How an error names ``path``: a file of the folder being built as its place in ``out``, and that
    folder itself as the folder it is made in (the user never named the temporary one)."""
    dest = out.absolute()  # where atomic_dir builds
    dest = dest.resolve() if dest.name == ".." or dest.is_symlink() else dest
    path = path.absolute()
    for i, part in enumerate((path, *path.parents)):
        if part.parent == dest.parent and part.name.startswith(f".{dest.name}."):
            return out.joinpath(*path.parts[len(path.parts) - i :]) if i else dest.parent
    return path


def _check_replaceable(out: Path) -> None:
    """``out`` is new, empty, or a folder ``prepare`` wrote: replacing it loses nothing else."""
    if out.exists() and not out.is_dir():  # said before converting, which takes a while
        raise DataError(f"{out} is a file, not a folder: give a folder for the prepared dataset")
    if not out.is_dir():
        return
    others = sorted(p.name for p in out.iterdir() if p.name not in OUTPUT_FILES)
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise DataError(
            f"{out} holds files that `rated data prepare` does not write ({shown}); it replaces the whole "
            "folder, so give a new or empty folder, or move them away"
        )


def _write(prepared: Prepared, root: Path) -> None:
    save_dataset(prepared.dataset, root)
    if prepared.irrelevance:
        write_jsonl(prepared.irrelevance, root / "irrelevance.jsonl")
    (root / "problems.txt").write_text("".join(p + "\n" for p in prepared.problems.items), encoding="utf-8")
