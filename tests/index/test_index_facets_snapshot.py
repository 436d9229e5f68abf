"""Facet snapshots (``rated.index.snapshot.dump_facets`` / ``restore_facets``): a table read back is the one
saved, and a blob that is damaged, foreign, made by other parsing or folding code, or inconsistent is
refused whole (the records are parsed instead), never half-used."""

import io

import numpy as np
import pytest

from rated import Tool, tool_filter
from rated.catalog.schema import Auth
from rated.index import snapshot
from rated.index.npzblob import from_json, json_array, open_npz, pack
from rated.stored_tool import StoredTool
from rated.tool_filter import FacetTable

POOL = [
    Tool(id="a", name="a", source="LangChain", tags=("Web", "web", "Search"), provider="acme"),
    Tool(id="b", name="b", source="n8n", auth=Auth(type="oauth2")),
    Tool(id="c", name="c", source="mcp", tags=("Straße",), provider="acme", auth=Auth(type="none")),
]


def table() -> FacetTable:
    entries = [StoredTool(t.id, t.model_dump_json(), "demo.db") for t in POOL]
    entries.insert(1, StoredTool("x", '{"id": "broken"', "demo.db"))  # damaged: no facets
    return FacetTable.parse(entries)


def members(blob: bytes) -> dict[str, np.ndarray]:
    with open_npz(blob) as saved:
        return {k: saved[k] for k in saved.files}


def repacked(blob: bytes, **changes) -> bytes:
    arrays = members(blob)
    arrays.update(changes)
    return pack(**arrays)


def test_a_table_read_back_is_the_one_saved():
    saved = table()
    restored = snapshot.restore_facets(snapshot.dump_facets(saved))
    assert restored.ids == ["a", "x", "b", "c"]
    np.testing.assert_array_equal(restored.digests, saved.digests)
    for key in ("source", "tags", "provider", "auth"):
        assert restored.values[key] == saved.values[key]
        np.testing.assert_array_equal(restored.starts[key], saved.starts[key])
        np.testing.assert_array_equal(restored.codes[key], saved.codes[key])
    assert restored.positions("tags", "web").tolist() == [0]
    assert restored.positions("tags", "strasse").tolist() == [3]
    assert restored.positions("provider", "b").tolist() == [2]  # no provider: its id
    assert restored.damaged() == [1] and not restored.fresh.any()


def test_a_table_of_tools_without_record_digests_is_not_saved():
    assert snapshot.dump_facets(FacetTable.parse(POOL)) is None


def changed(blob: bytes, member: str, change) -> np.ndarray:
    """``member`` of ``blob`` (values: as JSON) after ``change`` edits a copy of it in place."""
    value = members(blob)[member]
    value = from_json(value) if member == "values" else value.copy()
    change(value)
    return json_array(value) if member == "values" else value


def starts_row(key: str, row: list[int]):
    def change(starts: np.ndarray) -> None:
        starts[["source", "tags", "provider", "auth"].index(key)] = row

    return change


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # cut short
        lambda b: b"not a zip at all",
        lambda b: repacked(
            b, header=json_array({"format": 99, "fingerprint": snapshot.facets_fingerprint()})
        ),
        lambda b: repacked(b, header=json_array({"format": snapshot.FACETS_FORMAT, "fingerprint": "other"})),
        lambda b: repacked(b, ids=json_array(["a", "x", "b"])),  # a tool missing
        lambda b: repacked(b, ids=json_array(["a", "x", "b", 3])),
        lambda b: repacked(b, digests=members(b)["digests"][:3]),
        lambda b: repacked(b, digests=members(b)["digests"].astype(np.int64)),
        lambda b: repacked(b, codes=changed(b, "codes", lambda c: c.__setitem__(0, 7))),  # out of range
        lambda b: repacked(b, codes=changed(b, "codes", lambda c: c.__setitem__(-1, -1))),
        lambda b: repacked(b, codes=np.append(members(b)["codes"], np.int32(0))),  # one left over
        lambda b: repacked(b, codes=members(b)["codes"].astype(np.int64)),
        lambda b: repacked(b, values=changed(b, "values", lambda v: v.pop("auth"))),
        lambda b: repacked(b, values=changed(b, "values", lambda v: v["provider"].append(5))),
        lambda b: repacked(b, values=changed(b, "values", lambda v: v.__setitem__("auth", ["root"] * 3))),
        lambda b: repacked(b, starts=changed(b, "starts", starts_row("tags", [0, 2, 1, 2, 3]))),  # back
        lambda b: repacked(b, starts=changed(b, "starts", starts_row("tags", [0, 3, 3, 1, 3]))),
        lambda b: repacked(b, starts=changed(b, "starts", starts_row("source", [0, 2, 2, 2, 3]))),  # two
        lambda b: repacked(b, starts=changed(b, "starts", starts_row("provider", [0, 1, 2, 3, 3]))),
        lambda b: repacked(b, starts=changed(b, "starts", starts_row("tags", [0, 1, 2, 2, 3]))),  # damaged
        lambda b: repacked(b, starts=members(b)["starts"].astype(np.int32)),
        lambda b: repacked(b, starts=members(b)["starts"][:, :4].copy()),
    ],
)
def test_a_damaged_foreign_or_inconsistent_snapshot_is_refused_whole(damage):
    blob = snapshot.dump_facets(table())
    assert snapshot.restore_facets(blob) is not None
    assert snapshot.restore_facets(damage(blob)) is None


def test_a_compressed_member_is_never_inflated():
    arrays = members(snapshot.dump_facets(table()))
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    assert snapshot.restore_facets(buffer.getvalue()) is None


def test_a_snapshot_made_by_other_folding_code_of_the_same_version_is_not_used(monkeypatch):
    blob = snapshot.dump_facets(table())
    assert from_json(members(blob)["header"])["fingerprint"] == snapshot.facets_fingerprint()
    real = tool_filter.tool_facets

    def lower_not_fold(tool):  # "Straße" stays "straße": filters by "strasse" would miss it
        source, tags, provider, auth = real(tool)
        return source, tuple(sorted({t.lower() for t in tool.tags})), provider, auth

    monkeypatch.setattr(tool_filter, "tool_facets", lower_not_fold)
    snapshot.facets_fingerprint.cache_clear()
    try:
        assert snapshot.restore_facets(blob) is None
    finally:
        monkeypatch.undo()
        snapshot.facets_fingerprint.cache_clear()
    assert snapshot.restore_facets(blob) is not None


def test_the_lexical_and_facet_snapshots_are_kept_under_their_own_names():
    assert snapshot.FACETS_NAME != snapshot.NAME
