"""``atomic_path``: all or nothing, umask-based permissions, safe with several writers at once."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from rated.paths import atomic_path


def test_replaces_the_file_only_when_the_block_succeeds(tmp_path):
    dest = tmp_path / "f.txt"
    dest.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(dest) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert dest.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]  # no temporary left behind
    with atomic_path(dest) as tmp:
        assert tmp.parent == dest.parent and tmp != dest
        tmp.write_text("new")
    assert dest.read_text() == "new" and os.listdir(tmp_path) == ["f.txt"]


def test_permissions_follow_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        with atomic_path(tmp_path / "f") as tmp:
            tmp.write_text("x")
    finally:
        os.umask(old)
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o640


def test_concurrent_writers_never_collide(tmp_path):
    dest = tmp_path / "shared.bin"

    def write(tag: int) -> None:
        for i in range(50):
            with atomic_path(dest) as tmp:
                tmp.write_bytes(f"{tag}-{i}".encode() * 100)

    with ThreadPoolExecutor(4) as pool:  # map re-raises a worker's exception here
        list(pool.map(write, range(4)))
    assert os.listdir(tmp_path) == ["shared.bin"]
    content = dest.read_bytes()
    assert content == content[: len(content) // 100] * 100  # one writer's whole file, never a mix
