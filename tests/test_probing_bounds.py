"""The bounds of probing's settings, wherever they are given: a probe interval below ``MIN_EVERY`` (1 s)
made the prober re-read the store under the retriever's lock in a tight loop; an infinite one or an
infinite timeout failed only later (a wait past ``threading.TIMEOUT_MAX``, a shutdown waiting for ever)."""

from __future__ import annotations

import random

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.probing import MAX_EVERY, MAX_TIMEOUT, MIN_EVERY, Prober, http_check, probe
from rated.retriever import Retriever

NAN, INF = float("nan"), float("inf")


@pytest.fixture
def retriever():
    with Retriever.from_catalog([Tool(id="a", name="a")], encoder=HashEncoder(16)) as r:
        yield r


def test_the_interval_floor_is_one_second():
    assert (MIN_EVERY, MAX_EVERY, MAX_TIMEOUT) == (1.0, 86_400.0, 60.0)


@pytest.mark.parametrize("every", [0.5, 0.999, 0, -1, NAN, INF, MAX_EVERY + 1, True, "30", None])
def test_a_prober_refuses_an_interval_out_of_bounds(retriever, every):
    with pytest.raises(ConfigError, match=r"probe interval must be 1 to 86400 seconds.*polls it in a loop"):
        Prober(retriever, lambda tool: None, every=every)


def test_a_prober_takes_the_bounds_themselves(retriever):
    assert Prober(retriever, lambda tool: None, every=MIN_EVERY).every == 1.0
    assert Prober(retriever, lambda tool: None, every=MAX_EVERY).every == MAX_EVERY


@pytest.mark.parametrize("jitter", [-0.1, 0.6, NAN, INF, True, "0.2"])
def test_a_prober_refuses_a_jitter_out_of_bounds(retriever, jitter):
    with pytest.raises(ConfigError, match="probe jitter must be 0 to 0.5"):
        Prober(retriever, lambda tool: None, jitter=jitter)


@pytest.mark.parametrize("budget", [0, -1, True, 1.5, "3"])
def test_a_budget_out_of_bounds_is_refused_by_the_prober_and_by_a_round(retriever, budget):
    with pytest.raises(ConfigError, match="probe budget must be an integer >= 1"):
        Prober(retriever, lambda tool: None, budget=budget)
    with pytest.raises(ConfigError, match="budget must be an integer >= 1"):
        probe(retriever, lambda tool: None, budget, rng=random.Random(0))


@pytest.mark.parametrize("timeout", [0, -1, NAN, INF, MAX_TIMEOUT + 1, True, "5"])
def test_the_http_check_refuses_a_timeout_out_of_bounds(timeout):
    with pytest.raises(ConfigError, match="probe timeout must be > 0 and <= 60 seconds"):
        http_check(timeout=timeout)
