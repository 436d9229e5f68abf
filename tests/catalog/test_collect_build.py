"""build_catalog and the ``rated catalog`` CLI on a seeded cache: all sources, isolation of a failing source,
carry-over from a previous catalog, idempotent re-runs, stats and the PNG."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from rated.catalog.collect.build import SOURCES, build_catalog
from rated.catalog.collect.fetch import Fetcher
from rated.catalog.loaders import load_catalog
from rated.catalog.stats import catalog_stats
from rated.cli import main
from rated.encode.testing import HashEncoder


def _build(cache: Path, **kw: object):
    return build_catalog(None, encoder=HashEncoder(dim=64), fetcher=Fetcher(cache, offline=True), **kw)


def test_every_source_annotated(seed_cache: Callable[..., Path]) -> None:
    result = _build(seed_cache())
    assert not result.failed
    counts = {r.name: r.tools for r in result.reports}
    # acme_plus.send_message repeats acme.send_message word for word: an exact duplicate, dropped
    assert counts == {"n8n": 5, "langchain": 2, "crewai": 1, "llamaindex": 2, "public_apis": 4}
    assert result.exact_duplicates == 1
    assert len({t.id for t in result.tools}) == len(result.tools) == 14
    for tool in result.tools:
        assert 0.0 <= tool.extra["prior"]["r_static"] <= 1.0
        assert isinstance(tool.extra["defects"], list)
    assert result.prior_stats is not None and result.encoder == "hash-64-s0"
    # the same Acme send action on two platforms is linked
    assert any(t.group for t in result.tools)
    stats = catalog_stats(result.tools)
    assert stats["all"]["tools"] == 14 and set(stats) == {*SOURCES, "all"}


def test_a_failing_source_fails_alone(seed_cache: Callable[..., Path]) -> None:
    cache = seed_cache()
    fetcher = Fetcher(cache, offline=True)
    n8n_entry = fetcher.entry_dir(SOURCES["n8n"].packages[0])
    archive = next(p for p in n8n_entry.iterdir() if p.suffix == ".tgz")
    archive.write_bytes(b"corrupt")
    before = {p: p.read_bytes() for p in cache.rglob("*") if p.is_file() and p.suffix != ".sha256"}
    result = _build(cache)
    (failed,) = result.failed
    assert failed.name == "n8n" and "n8n-nodes-base" in failed.error and "corrupt" in failed.error
    assert {r.name for r in result.reports if r.ok} == set(SOURCES) - {"n8n"}
    assert not any(t.source == "n8n" for t in result.tools)
    after = {p: p.read_bytes() for p in cache.rglob("*") if p.is_file() and p.suffix != ".sha256"}
    assert after == before  # cache untouched, the corrupt archive included


def test_previous_catalog_carries_over(seed_cache: Callable[..., Path]) -> None:
    cache = seed_cache()
    full = _build(cache)
    one = build_catalog(
        ["crewai"], encoder=HashEncoder(dim=64), fetcher=Fetcher(cache, offline=True), previous=full.tools
    )
    assert [t.id for t in one.tools] == [t.id for t in full.tools]  # nothing lost, nothing duplicated
    kept = {r.name: r.carried_over for r in one.reports}
    assert kept["n8n"] == 5 and kept["crewai"] == 0


def test_cli_build_and_stats(
    seed_cache: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    cache = seed_cache()
    out = tmp_path / "cat.jsonl"
    args = ["catalog", "build", "--cache", str(cache), "--offline", "--encoder", "hash", "--out", str(out)]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tools"] == 14 and (tmp_path / "cat.report.json").is_file()
    first = out.read_text()
    assert main([*args, "--json"]) == 0  # a re-run gives the same file, no duplicate records
    capsys.readouterr()
    assert out.read_text() == first
    assert len(load_catalog(out)) == 14
    png = tmp_path / "rel.png"
    assert main(["catalog", "stats", str(out), "--png", str(png), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["sources"]["n8n"]["tools"] == 5 and png.stat().st_size > 1000
    assert main(["catalog", "stats", str(out)]) == 0
    assert "public_apis" in capsys.readouterr().out


def test_cli_failure_exit_code_and_unknown_source(
    seed_cache: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    cache = seed_cache()
    out = tmp_path / "cat.jsonl"
    base = ["catalog", "build", "--cache", str(cache), "--offline", "--encoder", "none", "--out", str(out)]
    assert main([*base, "--sources", "nope"]) == 2
    assert "unknown source" in capsys.readouterr().err
    empty = tmp_path / "empty-cache"
    assert (
        main(
            [
                "catalog",
                "build",
                "--cache",
                str(empty),
                "--offline",
                "--encoder",
                "none",
                "--out",
                str(out),
                "--sources",
                "crewai,public_apis",
            ]
        )
        == 1
    )
    assert "not cached" in capsys.readouterr().out
