"""A StoredTool validates its record only when its Tool is first read, keeps that Tool, and names the tool
when the record is damaged, at every read."""

import copy
import pickle
import threading

import pytest

from rated import Tool
from rated.errors import IndexFormatError
from rated.stored_tool import StoredTool, parse_record, record_digest

TOOL = Tool(id="w", name="getWeather", description="Weather by city", provider="owm", tags=("weather",))
RECORD = TOOL.model_dump_json()


def test_the_record_is_parsed_on_the_first_read_only_and_then_dropped(parses):
    entry = StoredTool("w", RECORD, "db")
    assert (entry.id, entry.digest, entry.parsed, parses) == ("w", record_digest(RECORD), False, [])
    tool = entry.tool
    assert tool == TOOL and entry.parsed and parses == ["w"]
    assert entry.tool is tool and parses == ["w"]  # kept
    assert entry._held is tool  # the text is not kept beside its Tool


def test_other_attributes_read_through_to_the_tool(parses):
    entry = StoredTool("w", RECORD, "db")
    assert (entry.name, entry.provider_key, entry.tags) == ("getWeather", "owm", ("weather",))
    assert parses == ["w"]
    with pytest.raises(AttributeError):
        entry.no_such_field  # noqa: B018
    with pytest.raises(AttributeError):
        entry._private  # noqa: B018 - never looked up on the tool (slots, copy, pickle probes)


def test_of_a_parsed_tool_reads_nothing():
    entry = StoredTool.of(TOOL, RECORD)
    assert entry.parsed and entry.tool is TOOL and entry.digest == record_digest(RECORD)


@pytest.mark.parametrize(
    ("record", "match"),
    [
        ('{"id": "w"}', r"(?s)db: stored record of tool 'w' is invalid: .*name"),
        ("not json", r"db: stored record of tool 'w' is invalid"),
        ('{"id": "w", "name": "x", "bogus": 1}', r"(?s)stored record of tool 'w' is invalid: .*bogus"),
        ('{"id": "other", "name": "x"}', r"db: stored record of tool 'w' holds the id 'other'$"),
    ],
)
def test_a_damaged_record_names_the_tool_at_every_read(record, match):
    entry = StoredTool("w", record, "db")  # no error yet: nothing is read
    for _ in range(2):
        with pytest.raises(IndexFormatError, match=match):
            entry.tool  # noqa: B018
        with pytest.raises(IndexFormatError, match=match):
            entry.name  # noqa: B018
    assert not entry.parsed


def test_parse_record_refuses_a_record_stored_under_another_id():
    assert parse_record(RECORD, "w") == TOOL
    with pytest.raises(IndexFormatError, match=r"store: stored record of tool 'x' holds the id 'w'"):
        parse_record(RECORD, "x")


def test_copies_and_pickles_work_parsed_or_not():
    for entry in (StoredTool("w", RECORD, "db"), StoredTool.of(TOOL, RECORD)):
        for other in (copy.copy(entry), copy.deepcopy(entry), pickle.loads(pickle.dumps(entry))):
            assert (other.id, other.digest, other.tool) == ("w", entry.digest, TOOL)


def test_threads_reading_one_entry_at_once_get_the_tool():
    for _ in range(20):
        entry = StoredTool("w", RECORD, "db")
        got: list[Tool] = []

        def read(entry: StoredTool = entry, got: list[Tool] = got) -> None:
            got.append(entry.tool)

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got == [TOOL] * 4 and entry.tool == TOOL
