"""Every example in a module docstring of ``rated`` runs (river's habit: examples are doctests).

Without this, an example goes stale silently when the API it shows changes (``Retriever``'s showed
``feedback`` returning nothing long after it began to return the ``Outcome``)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import rated

# modules that import an optional extra this environment may lack (the train extra: torch)
_OPTIONAL = ("rated.encode.train", "rated.encode.st")


def _modules() -> list[str]:
    # ``__main__`` modules run their program when imported
    names = (m.name for m in pkgutil.walk_packages(rated.__path__, "rated."))
    return sorted(n for n in names if not n.endswith(".__main__"))


def _with_examples() -> list[str]:
    found = []
    finder = doctest.DocTestFinder()
    for name in _modules():
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            # an optional extra this environment lacks (torch; fastapi without the service extra): its
            # modules' examples are not this environment's to run; a rated module failing to import is a bug
            missing = (exc.name or "").split(".")[0]
            if name.startswith(_OPTIONAL) or (missing and missing != "rated"):
                continue
            raise
        if any(t.examples for t in finder.find(module)):
            found.append(name)
    return found


def test_the_walk_finds_the_examples_we_know_of():
    names = _with_examples()
    assert {"rated.retriever", "rated.policy.rated", "rated.toolbox"} <= set(names)


@pytest.mark.parametrize("name", _with_examples())
def test_module_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of the examples in {name} failed (doctest output above)"
