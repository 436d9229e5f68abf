"""``typing.TypedDict`` parameters (which pydantic refuses before Python 3.12) read as the same
``typing_extensions.TypedDict``: the JSON schema of a function taking them, and its arguments converted,
are those of one taking the ``typing_extensions`` ones (``Required`` / ``NotRequired`` marks inside
``Annotated`` or ``ReadOnly`` of string annotations, ``typing`` ones held by ``typing_extensions`` ones); a
recursive one keeps pydantic's error, naming the parameter."""

from __future__ import annotations

import datetime
import sys
import typing
from typing import Annotated

import pytest
import typing_extensions
from pydantic import Field, ValidationError

from rated.catalog.objects import tools_from_objects
from rated.catalog.signature import argument_parser, signature_schema
from rated.errors import CatalogError


class Window(typing.TypedDict):
    """A time window."""

    start: datetime.datetime
    minutes: typing.NotRequired[int]


class Filters(typing.TypedDict, total=False):
    tags: list[str]
    windows: list[Window]
    main: typing.Required[Window | None]


class Node(typing.TypedDict):  # holds itself: left to pydantic, which refuses it before Python 3.12
    name: str
    children: list[Node]


def schedule(
    window: Window,
    filters: Filters | None = None,
    spare: Annotated[list[Window], Field(description="other windows")] = [],  # noqa: B006
    by_name: dict[str, typing.Optional[Window]] | None = None,  # noqa: UP045 - typing's Union, rebuilt
) -> str:
    """Schedule a meeting."""
    return "ok"


class Extensions:
    """The same TypedDicts from typing_extensions, which pydantic takes on every Python."""

    class Window(typing_extensions.TypedDict):
        """A time window."""

        start: datetime.datetime
        minutes: typing_extensions.NotRequired[int]

    class Filters(typing_extensions.TypedDict, total=False):
        tags: list[str]
        windows: list[Extensions.Window]
        main: typing_extensions.Required[Extensions.Window | None]

    @staticmethod
    def schedule(
        window: Extensions.Window,
        filters: Extensions.Filters | None = None,
        spare: Annotated[list[Extensions.Window], Field(description="other windows")] = [],  # noqa: B006
        by_name: dict[str, Extensions.Window | None] | None = None,
    ) -> str:
        """Schedule a meeting."""
        return "ok"


def test_the_schema_is_that_of_the_same_typing_extensions_typeddicts():
    schema = signature_schema(schedule)
    assert schema == signature_schema(Extensions.schedule)
    assert schema["$defs"]["Window"] == {
        "description": "A time window.",
        "properties": {"start": {"format": "date-time", "type": "string"}, "minutes": {"type": "integer"}},
        "required": ["start"],
        "title": "Window",
        "type": "object",
    }
    assert schema["$defs"]["Filters"]["required"] == ["main"]
    assert schema["properties"]["spare"]["description"] == "other windows"
    [tool] = tools_from_objects([schedule])
    assert tool.parameters == schema


def test_arguments_are_converted_as_for_the_typing_extensions_typeddicts():
    arguments = {
        "window": {"start": "2026-12-01T09:30:00"},
        "filters": {"main": None, "windows": [{"start": "2026-12-02T10:00:00", "minutes": "15"}]},
        "by_name": {"ada": {"start": "2026-12-03T11:00:00"}},
    }
    parsed = argument_parser(schedule)(arguments)
    assert parsed == argument_parser(Extensions.schedule)(arguments)
    assert parsed["window"] == {"start": datetime.datetime(2026, 12, 1, 9, 30)}
    assert parsed["filters"]["windows"] == [{"start": datetime.datetime(2026, 12, 2, 10, 0), "minutes": 15}]
    assert type(parsed["window"]) is dict
    with pytest.raises(ValidationError, match="window.start"):
        argument_parser(schedule)({"window": {"start": "soon"}})
    with pytest.raises(ValidationError, match="main"):  # required in a total=False TypedDict
        argument_parser(schedule)({"window": {"start": "2026-12-01T09:30:00"}, "filters": {}})


def test_a_recursive_typing_typeddict_keeps_the_error_naming_the_parameter():
    def walk(tree: Node, depth: int = 1) -> str:
        """Walk a tree."""
        return tree["name"]

    if sys.version_info >= (3, 12):
        pytest.skip("pydantic takes typing.TypedDict from Python 3.12")
    with pytest.raises(CatalogError, match="parameter 'tree': its type cannot be written as JSON schema"):
        tools_from_objects([walk])


class Volume(typing.TypedDict, total=False):  # marks inside Annotated, in string annotations (the module's)
    level: Annotated[typing.Required[int], Field(description="how loud")]
    muted: bool


class Sound(typing.TypedDict):
    name: str
    volume: Annotated[typing.NotRequired[Volume], Field(description="its volume")]
    echo: typing_extensions.ReadOnly[typing.NotRequired[float]]


class Outer(typing_extensions.TypedDict, closed=True):  # typing_extensions' own, holding typing's
    sound: Sound


def play(sound: Sound, outer: Outer | None = None) -> str:
    """Play a sound."""
    return "ok"


class ExtensionsMarked:
    class Volume(typing_extensions.TypedDict, total=False):
        level: Annotated[typing_extensions.Required[int], Field(description="how loud")]
        muted: bool

    class Sound(typing_extensions.TypedDict):
        name: str
        volume: Annotated[
            typing_extensions.NotRequired[ExtensionsMarked.Volume], Field(description="its volume")
        ]
        echo: typing_extensions.ReadOnly[typing_extensions.NotRequired[float]]

    class Outer(typing_extensions.TypedDict, closed=True):
        sound: ExtensionsMarked.Sound

    @staticmethod
    def play(sound: ExtensionsMarked.Sound, outer: ExtensionsMarked.Outer | None = None) -> str:
        """Play a sound."""
        return "ok"


@pytest.mark.filterwarnings(
    "ignore:Item 'echo' on TypedDict class 'Sound' is using the `ReadOnly`:UserWarning"
)
def test_marks_inside_annotated_and_typing_typeddicts_inside_typing_extensions_ones():
    schema = signature_schema(play)
    assert schema == signature_schema(ExtensionsMarked.play)
    assert schema["$defs"]["Volume"]["required"] == ["level"]  # Required inside Annotated, total=False
    assert schema["$defs"]["Sound"]["required"] == ["name"]  # NotRequired inside Annotated and ReadOnly
    assert schema["$defs"]["Sound"]["properties"]["volume"]["description"] == "its volume"
    assert schema["$defs"]["Outer"]["properties"]["sound"] == {"$ref": "#/$defs/Sound"}
    assert schema["$defs"]["Outer"]["additionalProperties"] is False  # closed, as it was
    arguments = {"sound": {"name": "bell"}, "outer": {"sound": {"name": "gong", "volume": {"level": "3"}}}}
    parsed = argument_parser(play)(arguments)
    assert parsed == argument_parser(ExtensionsMarked.play)(arguments)
    assert parsed["outer"]["sound"]["volume"] == {"level": 3}
    with pytest.raises(ValidationError, match="level"):
        argument_parser(play)({"sound": {"name": "bell", "volume": {"muted": True}}})
