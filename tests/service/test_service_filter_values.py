"""FilterValue: one string or a list of strings, anything else one short error that never quotes it."""

import pytest
from pydantic import TypeAdapter, ValidationError

from rated.service.filter_values import FilterValue

ADAPTER = TypeAdapter(FilterValue)


@pytest.mark.parametrize("value", [None, "mcp", [], ["a", "b"]])
def test_strings_and_lists_of_strings_pass_unchanged(value):
    assert ADAPTER.validate_python(value) == value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (5, "got a number"),
        (True, "got a boolean"),
        ({"a": 1}, "got an object"),
        (("a",), "got a tuple"),
        (["a", 2.5], "item 1 is a number"),
        (["secret-value-01234"] * 3 + [["x"]] * 40, "item 3 is a list"),
    ],
)
def test_anything_else_is_one_error_naming_the_first_problem(value, message):
    with pytest.raises(ValidationError) as caught:
        ADAPTER.validate_python(value)
    (error,) = caught.value.errors(include_input=False)
    assert error["msg"].startswith("must be a string or a list of strings") and error["msg"].endswith(message)
    assert "secret-value" not in error["msg"]
