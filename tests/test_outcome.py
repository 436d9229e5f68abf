import pytest

from rated import ConfigError, Outcome, OutcomeKind


@pytest.mark.parametrize(
    ("kind", "counts"),
    [
        ("success", False),
        ("tool_error", True),
        ("timeout", True),
        ("rate_limited", True),
        ("auth_error", True),
        ("caller_error", False),
    ],
)
def test_which_outcomes_count_against_the_tool(kind: str, counts: bool) -> None:
    assert Outcome.of(kind).counts_against_tool is counts


def test_parse_is_case_insensitive_and_accepts_booleans() -> None:
    assert Outcome.of(" Tool_Error ").kind is OutcomeKind.TOOL_ERROR
    assert Outcome.of(True).is_success
    assert Outcome.of(False).kind is OutcomeKind.TOOL_ERROR


def test_unknown_outcome_names_the_allowed_values() -> None:
    with pytest.raises(ConfigError, match="caller_error"):
        Outcome.of("exploded")


@pytest.mark.parametrize("bad", [float("nan"), -1.0, float("inf")])
def test_retry_after_must_be_finite_and_non_negative(bad: float) -> None:
    with pytest.raises(ConfigError, match="retry_after"):
        Outcome(OutcomeKind.RATE_LIMITED, retry_after=bad)
