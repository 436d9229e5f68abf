"""The static reliability prior: each component, the weighting, and stored statistics for new tools."""

from __future__ import annotations

import numpy as np
import pytest

from rated.catalog.prior import (
    DEFAULT_SOURCE_WEIGHT,
    RELIABLE_THRESHOLD,
    PriorStats,
    compute_prior,
    metadata_richness,
    score_new,
    source_weight,
)
from rated.catalog.schema import Tool
from rated.encode.testing import HashEncoder
from rated.errors import CatalogError

ENC = HashEncoder(dim=128)


def _tool(i: str, name: str, desc: str, source: str = "custom", **kw: object) -> Tool:
    return Tool(id=i, name=name, description=desc, source=source, **kw)


TOOLS = [
    _tool(
        "a",
        "send_email",
        "Send email to a recipient with a subject",
        "langchain",
        tags=("mail",),
        parameters={"properties": {"to": {}, "subject": {}}},
    ),
    _tool("b", "weather", "", "n8n"),
    _tool("c", "stock_quote", "Translate poems into French verse", "crewai"),
    _tool("d", "search", "search the web and return search results", "other"),
    _tool(
        "e", "calendar", "x" * 400, "llamaindex", endpoint="https://cal.example.com", auth={"type": "oauth2"}
    ),
]


def test_components_shapes_and_formula() -> None:
    res = compute_prior(TOOLS, ENC)
    assert res.tool_ids == tuple(t.id for t in TOOLS)
    for arr in (res.r_cons, res.w_src, res.r_qual, res.r_static):
        assert arr.dtype == np.float32 and arr.shape == (5,)
        assert np.all((arr >= 0) & (arr <= 1))
    np.testing.assert_allclose(res.r_static, 0.5 * res.r_cons + 0.3 * res.w_src + 0.2 * res.r_qual, atol=1e-6)
    np.testing.assert_array_equal(res.reliable, res.r_static >= RELIABLE_THRESHOLD)
    assert res.r_cons[1] == 0.0  # empty description
    assert res.r_cons[0] > res.r_cons[2]  # consistent beats mismatched
    assert res.r_cons[3] > 0.3
    np.testing.assert_allclose(res.w_src, [0.9, 0.8, 0.9, DEFAULT_SOURCE_WEIGHT, 0.9])
    # the longest, richest description scores highest on quality, the empty one lowest
    assert int(np.argmax(res.r_qual)) == 4 and int(np.argmin(res.r_qual)) == 1
    assert res.record(0)["r_static"] == pytest.approx(float(res.r_static[0]), abs=1e-4)


def test_r_cons_is_the_name_description_cosine() -> None:
    res = compute_prior([TOOLS[0]], ENC, stats=PriorStats(0, 1, 0, 1))
    e = ENC.encode_tools(["send email", TOOLS[0].description])
    assert res.r_cons[0] == pytest.approx(max(0.0, float(e[0] @ e[1])), abs=1e-6)


def test_r_qual_uses_median_and_std() -> None:
    res = compute_prior(TOOLS, ENC)
    lens = np.array([len(t.description) for t in TOOLS], dtype=float)
    rich = np.array([metadata_richness(t) for t in TOOLS], dtype=float)
    z = 0.6 * (lens - np.median(lens)) / lens.std() + 0.4 * (rich - np.median(rich)) / rich.std()
    np.testing.assert_allclose(res.r_qual, 1 / (1 + np.exp(-z)), rtol=1e-5)
    assert res.stats.desc_median == float(np.median(lens))


def test_reliable_flag_for_a_strong_tool() -> None:
    strong = _tool("s", "send email", "send email", "official")
    weak = [_tool(f"w{i}", "send email", "", "custom") for i in range(3)]
    res = compute_prior([strong, *weak], ENC)
    assert bool(res.reliable[0]) and not res.reliable[1:].any()


def test_new_tools_use_stored_stats_and_do_not_move_others() -> None:
    base = compute_prior(TOOLS, ENC)
    new = [_tool("n", "news", "Latest news headlines from many sources", "langchain")]
    scored = score_new(new, ENC, base.stats)
    refit = compute_prior([*TOOLS, *new], ENC)
    assert scored.stats == base.stats
    np.testing.assert_allclose(scored.r_static[0], compute_prior(new, ENC, stats=base.stats).r_static[0])
    assert refit.stats != base.stats  # refitting would have changed the scale
    assert PriorStats.from_dict(base.stats.to_dict()) == base.stats


def test_constant_columns_and_empty_catalog() -> None:
    same = [_tool(f"t{i}", "x", "same text", "n8n") for i in range(3)]
    res = compute_prior(same, ENC)
    np.testing.assert_allclose(res.r_qual, 0.5)
    with pytest.raises(CatalogError, match="empty"):
        compute_prior([], ENC)
    assert len(score_new([], ENC, res.stats)) == 0


def test_helpers() -> None:
    assert source_weight(_tool("x", "x", "", "custom", extra={"first_party": True})) == 1.0
    assert source_weight(_tool("x", "x", "", "LangChain")) == 0.9
    t = _tool(
        "x",
        "x",
        "",
        tags=("a", "b"),
        parameters={"properties": {"p": {}}},
        endpoint="https://a.b",
        auth={"type": "none"},
    )
    assert metadata_richness(t) == 5
