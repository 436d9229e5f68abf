"""``atomic_dir``: a folder replaced whole or not at all, the previous one kept until the new one is in."""

from __future__ import annotations

import os

import pytest

from rated.errors import ConfigError
from rated.paths import atomic_dir, fresh_dir


def _fill(folder, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def _read(folder) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize(
    "error", [RuntimeError("bad input"), OSError(28, "No space left on device"), KeyboardInterrupt()]
)
def test_an_error_midway_leaves_the_previous_folder_and_no_temporary(tmp_path, error):
    dest = tmp_path / "ds"
    _fill(dest, a="old a", b="old b")
    with pytest.raises(type(error)), atomic_dir(dest) as tmp:
        assert tmp.parent == tmp_path and tmp != dest and not any(tmp.iterdir())
        (tmp / "a").write_text("new a")
        raise error
    assert _read(dest) == {"a": "old a", "b": "old b"}
    assert os.listdir(tmp_path) == ["ds"]


def test_success_replaces_the_whole_folder(tmp_path):
    dest = tmp_path / "ds"
    _fill(dest, a="old a", stale="gone")
    with atomic_dir(dest) as tmp:
        (tmp / "a").write_text("new a")
        assert _read(dest) == {"a": "old a", "stale": "gone"}  # the previous one is there until the end
    assert _read(dest) == {"a": "new a"} and os.listdir(tmp_path) == ["ds"]
    with atomic_dir(tmp_path / "new" / "deeper") as tmp:  # missing parents are created
        (tmp / "x").write_text("x")
    assert _read(tmp_path / "new" / "deeper") == {"x": "x"}


def test_a_failed_swap_puts_the_previous_folder_back(tmp_path, monkeypatch):
    dest = tmp_path / "ds"
    _fill(dest, a="old a")
    real_rename = os.rename

    def rename(src, dst):
        if str(src).endswith(".tmp"):
            raise OSError(18, "Invalid cross-device link", str(src))
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(OSError, match="cross-device"), atomic_dir(dest) as tmp:
        (tmp / "a").write_text("new a")
    assert _read(dest) == {"a": "old a"} and os.listdir(tmp_path) == ["ds"]


def test_a_symlink_is_kept_and_its_target_replaced(tmp_path):
    target, link = tmp_path / "real", tmp_path / "link"
    _fill(target, a="old a")
    link.symlink_to(target)
    with atomic_dir(link) as tmp:
        (tmp / "a").write_text("new a")
    assert link.is_symlink() and _read(target) == {"a": "new a"}
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]


def test_a_file_in_the_way_is_refused(tmp_path):
    (tmp_path / "f").write_text("keep")
    with pytest.raises(ConfigError, match="is a file, not a folder"), atomic_dir(tmp_path / "f"):
        pass
    assert (tmp_path / "f").read_text() == "keep"


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002, 0o077])
def test_the_folder_gets_the_permissions_a_plain_mkdir_gives(tmp_path, umask):
    old = os.umask(umask)
    try:
        with atomic_dir(tmp_path / "ds") as tmp:
            (tmp / "sub").mkdir()
        staged = fresh_dir(tmp_path, ".model.tmp-")
        (tmp_path / "plain").mkdir()
    finally:
        os.umask(old)
    want = 0o777 & ~umask
    assert (tmp_path / "plain").stat().st_mode & 0o777 == want
    for folder in (tmp_path / "ds", tmp_path / "ds" / "sub", staged):
        assert folder.stat().st_mode & 0o777 == want, (folder, oct(folder.stat().st_mode & 0o777))
    assert staged.name.startswith(".model.tmp-") and not any(staged.iterdir())
