"""``Retriever`` under arbitrary Python values (hypothesis): whatever is passed to ``retrieve``,
``retrieve_many``, ``feedback``, ``health`` or ``outcomes``, the call succeeds or raises a ``RatedError``
(never a TypeError, ValueError or KeyError from inside), and a call that raises leaves the store as it was.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError, QueryError, RatedError, UnknownToolError
from rated.outcome import Outcome, OutcomeKind
from rated.retriever import Retriever

IDS = ("mail.a", "mail.b", "weather", "café")
FUZZ = settings.get_profile("fuzz-200")  # tests/conftest.py: a fixed run in CI; FUZZ_N=5000 hunts


class _Str(str):
    """A str subclass, as some frameworks hand over."""


class _Hostile:
    """An object whose conversions fail: str(), float(), comparisons, hashing."""

    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __repr__(self) -> str:
        return "_Hostile()"

    def __float__(self) -> float:
        raise RuntimeError("no float for you")

    def __lt__(self, other: object) -> bool:
        raise RuntimeError("no order for you")

    __hash__ = None  # type: ignore[assignment]


TEXT = st.one_of(
    st.sampled_from(["x", "é"]).map(lambda c: c * 10_001),  # built: a listed one would be in reprs
    st.text(max_size=30),
    st.text(st.characters(codec=None, categories=None), max_size=10),
    st.sampled_from(["", " ", "\x00", "\ud800", "a\udfffb", "cafe\u0301", " SUCCESS ", "timeout", "NaN"]),
    st.sampled_from(IDS),
    st.sampled_from(IDS).map(_Str),
)
ODD = st.sampled_from(
    [
        np.float64("nan"),
        np.float32(1.5),
        np.int64(2),
        np.int8(-3),
        np.uint64(2**64 - 1),
        np.bool_(True),
        np.array([1, 2]),
        np.array(3),
        Decimal("NaN"),
        Decimal("1e400"),
        Decimal("-0"),
        Fraction(1, 3),
        complex(1, 1),
        object(),
        _Hostile(),
        Ellipsis,
        b"mail.a",
        bytearray(b"success"),
        memoryview(b"x"),
    ]
)
NUMBERS = st.one_of(
    st.integers(),
    st.sampled_from([10**30, -(10**30), 2**63, -1, 0, 10**400, -(10**400)]),
    st.sampled_from([1, -1]).map(lambda sign: sign * 10**5000),  # str() refuses ints over 4,300 digits
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0]),
)
OUTCOMES = st.sampled_from(list(OutcomeKind)) | st.builds(
    Outcome, st.sampled_from(list(OutcomeKind)), st.none() | st.floats(0, 100)
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.binary(max_size=10), TEXT, ODD, OUTCOMES)
VALUES = st.one_of(
    ODD,  # weighted: these are the values most likely to meet an unguarded conversion
    SCALARS,
    st.recursive(
        SCALARS,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.tuples(inner)
            | st.dictionaries(TEXT, inner, max_size=2)
            | st.frozensets(TEXT, max_size=2)
            | st.iterables(inner, max_size=3)
        ),
        max_leaves=6,
    ),
)


def mostly(valid: st.SearchStrategy) -> st.SearchStrategy:
    """``valid`` two times in three, anything else the third: so that whole calls are often valid."""
    return st.integers(0, 2).flatmap(lambda i: VALUES if i == 2 else valid)


QUERIES = mostly(st.sampled_from(["send an email", "weather in Oslo", "cafe\u0301"]))
K = mostly(st.integers(1, 4))


def _snapshot(r: Retriever) -> tuple:
    """Everything a call could have written: the outcome log, the learned states, the catalog."""
    store = r.store
    return (
        [(o.tool_id, o.outcome, o.query_hash, o.retry_after) for o in store.outcomes(None, None)],
        store.states_since(0)[0],
        store.catalog_version(),
        store.load_catalog().ids,
    )


def test_any_argument_either_works_or_raises_a_rated_error_and_writes_nothing(tmp_path):
    with Retriever.from_catalog(
        [Tool(id=i, name=f"tool_{n}", description=f"send email tool {i}") for n, i in enumerate(IDS)],
        db=tmp_path / "fuzz.db",
        encoder=HashEncoder(64),
        clock=lambda: 1000.0,
    ) as r:
        calls = {
            "retrieve": st.tuples(QUERIES, K),
            "retrieve_many": st.tuples(mostly(st.lists(QUERIES, max_size=3)), K),
            "feedback": st.tuples(
                mostly(st.sampled_from([*IDS, "cafe\u0301"])),
                mostly(st.sampled_from([*OutcomeKind, *(k.value for k in OutcomeKind), True, False])),
                mostly(st.none() | QUERIES),
                mostly(st.none() | st.floats(0, 60)),
            ),
            "health": st.tuples(mostly(st.sampled_from(IDS))),
            "outcomes": st.tuples(
                mostly(st.none() | st.sampled_from(IDS)), mostly(st.none() | st.integers(0, 5))
            ),
        }
        recorded = []

        @FUZZ
        @given(data=st.data(), method=st.sampled_from(sorted(calls)))
        def call(data: st.DataObject, method: str) -> None:
            args = data.draw(calls[method])
            before = _snapshot(r)
            try:
                getattr(r, method)(*args)
            except RatedError:
                assert _snapshot(r) == before, (method, args)
                return
            after = _snapshot(r)
            if method == "feedback":
                assert len(after[0]) == len(before[0]) + 1 and after[0][:-1] == before[0], (method, args)
                recorded.append(after[0][-1])
            else:
                assert after == before, (method, args)

        call()
        assert recorded, "no feedback call was valid: the strategy tests nothing"
        assert [(o.tool_id, o.outcome) for o in r.outcomes(limit=None)] == [(o[0], o[1]) for o in recorded]
        assert [t.tool.id for t in r.tools()] == list(IDS)


# ---- what the fuzzing found, pinned ----------------------------------------------------------------------
def _retriever(tmp_path) -> Retriever:
    tools = [Tool(id=i, name=f"tool_{n}", description=f"send email tool {i}") for n, i in enumerate(IDS)]
    return Retriever.from_catalog(tools, db=tmp_path / "pinned.db", encoder=HashEncoder(64))


def test_retrieve_many_of_a_0d_array_is_a_query_error(tmp_path):
    with _retriever(tmp_path) as r, pytest.raises(QueryError, match="list of queries, got ndarray"):
        r.retrieve_many(np.array(3))  # Iterable by type, TypeError when iterated


def test_a_retry_after_too_large_for_a_float_is_a_config_error_and_nothing_is_stored(tmp_path):
    with _retriever(tmp_path) as r:
        with pytest.raises(ConfigError, match="retry_after must be a finite number"):
            r.feedback("mail.a", "rate_limited", retry_after=10**400)  # was OverflowError
        with pytest.raises(ConfigError, match="retry_after"):
            r.feedback("mail.a", Outcome(OutcomeKind.RATE_LIMITED), retry_after=10**400)
        assert r.outcomes(limit=None) == []
    with pytest.raises(ConfigError, match="retry_after"):
        Outcome(OutcomeKind.RATE_LIMITED, 10**400)
    assert Outcome(OutcomeKind.RATE_LIMITED, 10**300).retry_after == 1e300  # large, but a float


def test_integers_str_refuses_are_described_not_printed(tmp_path):
    huge = 10**5000  # repr() raises ValueError over 4,300 digits: the error message itself failed
    with _retriever(tmp_path) as r:
        with pytest.raises(
            ConfigError, match="k must be an integer >= 1, got an integer of about 5,000 digits"
        ):
            r.retrieve("send an email", k=-huge)
        with pytest.raises(ConfigError, match="limit must be None or an integer >= 0, got an integer of"):
            r.outcomes(limit=-huge)
        r.feedback("mail.a", "success")
        for limit in (huge, 10**30, np.uint64(2**64 - 1)):  # over any store's 64-bit limit: all records
            assert [o.tool_id for o in r.outcomes(limit=limit)] == ["mail.a"]


def test_values_whose_str_raises_get_the_usual_errors(tmp_path):
    with _retriever(tmp_path) as r:
        with pytest.raises(UnknownToolError, match=r"unknown tool id: _Hostile\(\)"):
            r.feedback(_Hostile(), "success")  # was the object's own RuntimeError from str()
        with pytest.raises(UnknownToolError):
            r.health(_Hostile())
        with pytest.raises(ConfigError, match=r"unknown outcome _Hostile\(\); expected one of"):
            r.feedback("mail.a", _Hostile())
        assert r.outcomes(limit=None) == []


def test_huge_values_are_quoted_short_in_errors(tmp_path):
    with _retriever(tmp_path) as r:
        with pytest.raises(UnknownToolError) as unknown:
            r.feedback("y" * 1_000_000, "success")
        with pytest.raises(ConfigError) as outcome:
            r.feedback("mail.a", "z" * 1_000_000)
    assert len(str(unknown.value)) < 300 and "(1,000,000 characters)" in str(unknown.value)
    assert len(str(outcome.value)) < 400 and "(1,000,000 characters)" in str(outcome.value)
    assert unknown.value.tool_id == "y" * 1_000_000  # the id itself stays whole
