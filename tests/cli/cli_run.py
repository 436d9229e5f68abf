"""``run(capsys, *argv)``: the CLI tests' one way to call ``rated`` in-process (imported by module name, as
the other shared test modules are: the tests folder is not a package)."""

from __future__ import annotations

import pytest

from rated.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    """``rated *argv`` (each argument as ``str``): its exit code, stdout and stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
