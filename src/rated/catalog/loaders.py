"""Read a tool catalog in any of the formats agent developers already have, and write it back as JSONL.

Accepted inputs (detected, never guessed silently):

- JSONL: one ``Tool`` record per line (the native format, what ``save_catalog`` writes);
- a JSON list of ``Tool`` records;
- OpenAI-style tool definitions: ``[{"type": "function", "function": {"name", "description",
  "parameters"}}]``, the Responses API's flat ``[{"type": "function", "name", ...}]``, or bare function
  dicts ``[{"name", "description", "parameters"}]``;
- Anthropic tool definitions ``[{"name", "description", "input_schema"}]``;
- an MCP ``tools/list`` result: ``{"tools": [{"name", "description", "inputSchema", ...}]}``, or the
  whole JSON-RPC response ``{"jsonrpc": "2.0", "id": 1, "result": {"tools": [...]}}`` (a chat request
  body's ``{"tools": [...]}`` of OpenAI/Anthropic definitions works too);
- an OpenAPI 3.0/3.1 or Swagger 2.0 document (JSON): one tool per operation (``rated.catalog.openapi``).

Files are UTF-8 (a BOM is fine); UTF-16/32 files that start with a BOM are re-encoded.

OpenAI, Anthropic, MCP and OpenAPI definitions (in a list, or one per JSONL line) carry no id: one is
made as ``"<source>:<name>"`` (``source`` defaults to ``openai`` / ``anthropic`` / ``mcp`` / ``openapi``;
pass the server name to keep ids apart across servers), and a repeated name gets ``#2``, ``#3`` in order
of appearance, so ids are stable as long as the list order is. Every problem in the input is collected
(location, field, reason) and raised together as one ``CatalogError``: a catalog is either loaded whole or
rejected, never half-loaded, and duplicate ids are an error, not an overwrite (ids equal up to Unicode
normalisation count as duplicates; ids differing in case do not, they are distinct).
"""

from __future__ import annotations

import codecs
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rated.catalog.openapi import is_openapi, openapi_records
from rated.catalog.schema import Tool
from rated.errors import CatalogError, CatalogProblem
from rated.paths import atomic_path
from rated.shown import clipped
from rated.validation_text import pydantic_reason

__all__ = ["load_catalog", "save_catalog"]

MAX_NESTING = 64  # JSON-schema parameters nest a few levels; hundreds mean a broken or hostile file
_TOO_DEEP = f"nested more than {MAX_NESTING} levels deep"

_FUNCTION_KEYS = frozenset({"name", "description", "parameters", "strict"})
_MCP_EXTRA_KEYS = ("title", "outputSchema", "annotations", "_meta")
_NUMBERED = re.compile(r"(?:line|item) (?P<n>\d+)|tools\[(?P<i>\d+)\]")  # the locations with a position

# A record waiting to become a Tool: (location, dict for Tool.model_validate, field renames for errors).
_Pending = tuple[str, dict[str, Any], dict[str, str]]


def load_catalog(
    source: str | Path | list[Any] | dict[str, Any], *, source_name: str | None = None
) -> list[Tool]:
    """Load and validate a catalog; raise ``CatalogError`` listing every problem.

    ``source`` is a path (``.jsonl`` files and files whose content is one JSON object per line are read as
    JSONL), JSON text (a ``str`` starting with ``[`` or ``{``), or an already parsed list/dict.
    ``source_name`` overrides the ``source`` field and id prefix of OpenAI/MCP definitions.
    """
    path_label: str | None = None
    if isinstance(source, (list, dict)):
        parsed: Any = source
        pending, problems = _from_object(parsed, source_name)
    else:
        text_or_path = source
        if isinstance(text_or_path, str) and text_or_path.lstrip()[:1] in ("[", "{"):
            raw = text_or_path.encode("utf-8")
        else:
            path = Path(text_or_path).expanduser()
            path_label = str(path)
            if path.is_dir():
                raise CatalogError("is a directory, not a catalog file", path=path_label)
            if not path.is_file():
                raise CatalogError("catalog file not found", path=path_label)
            if path.suffix.lower() in (".yaml", ".yml"):
                raise CatalogError(
                    "YAML is not read: convert the file (e.g. an OpenAPI spec) to JSON", path=path_label
                )
            try:
                raw = path.read_bytes()
            except OSError as exc:
                raise CatalogError(f"cannot read catalog file ({exc.strerror})", path=path_label) from None
        force_jsonl = path_label is not None and path_label.endswith(".jsonl")
        raw = _as_utf8(raw, path_label)
        pending, problems = _from_bytes(raw, force_jsonl, source_name)
    tools = _validate(pending, problems)
    if problems:
        problems.sort(key=_position)  # stable: one line's problems stay in the order they were found
        raise CatalogError(f"invalid catalog: {len(problems)} problem(s)", problems, path=path_label)
    if not tools:
        raise CatalogError("the catalog holds no tools", path=path_label)
    return tools


def save_catalog(tools: Iterable[Tool], path: str | Path) -> Path:
    """Write ``tools`` as JSONL (atomically: a crash never leaves half a file); duplicate ids are refused."""
    tools = list(tools)
    seen: dict[str, tuple[str, str]] = {}
    problems = []
    for i, tool in enumerate(tools):
        clash = _clash(tool.id, f"item {i}", seen)
        if clash:
            problems.append(CatalogProblem(f"item {i}", "id", clash))
    out = Path(path).expanduser()
    if problems:
        raise CatalogError("refusing to save a catalog with duplicate ids", problems, path=str(out))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(out) as tmp, tmp.open("w", encoding="utf-8") as fh:
            for tool in tools:
                fh.write(tool.model_dump_json(exclude_defaults=True) + "\n")
    except OSError as exc:
        raise CatalogError(f"cannot write the catalog ({exc.strerror or exc})", path=str(out)) from None
    return out


# --------------------------------------------------------------------------------------------- parsing

# Windows PowerShell's `>` and some editors write UTF-16 with a byte-order mark; UTF-32 BOMs go first, as
# the UTF-32-LE one starts with the UTF-16-LE one.
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _as_utf8(raw: bytes, path_label: str | None) -> bytes:
    """``raw`` as UTF-8: UTF-16/32 text that announces itself with a BOM is re-encoded, the rest kept."""
    for bom, codec in _WIDE_BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(codec).encode("utf-8")
            except UnicodeDecodeError as exc:
                reason = f"starts with a {codec.upper()} byte-order mark but is not valid {codec.upper()}"
                problem = CatalogProblem("document", "", f"{reason} (at byte {exc.start})")
                raise CatalogError("invalid catalog: 1 problem(s)", [problem], path=path_label) from None
    return raw


def _from_bytes(
    raw: bytes, force_jsonl: bool, source_name: str | None
) -> tuple[list[_Pending], list[CatalogProblem]]:
    stripped = raw.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not force_jsonl and stripped[:1] == b"[":
        return _whole_json(raw, source_name)
    if not force_jsonl and stripped[:1] == b"{":
        # One JSON object (MCP result / envelope), or JSONL whose lines are objects: the whole text decides.
        try:
            obj = json.loads(raw.decode("utf-8-sig"))
        except (ValueError, RecursionError):  # bad UTF-8 and bad JSON are ValueErrors too
            if _first_line_is_object(stripped):
                return _jsonl(raw, source_name)
            return _whole_json(raw, source_name)
        return _from_object(obj, source_name)
    if not stripped:
        return [], []
    if force_jsonl:
        return _jsonl(raw, source_name)
    return _whole_json(raw, source_name)


def _first_line_is_object(stripped: bytes) -> bool:
    """JSONL rather than one broken JSON document: one of the first few lines is a complete object."""
    lines = [ln for ln in stripped.split(b"\n", 6)[:6] if ln.strip()]
    for line in lines[:5]:
        try:
            if isinstance(json.loads(line), dict):
                return True
        except (ValueError, RecursionError):
            continue
    return False


def _whole_json(raw: bytes, source_name: str | None) -> tuple[list[_Pending], list[CatalogProblem]]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        at = exc.start + len(raw) - len(exc.object)  # utf-8-sig counts from after a byte-order mark
        line = raw[:at].count(b"\n") + 1
        return [], [CatalogProblem(f"line {line}", "", f"not valid UTF-8 (byte 0x{raw[at]:02x})")]
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [CatalogProblem(f"line {exc.lineno}", "", f"invalid JSON: {exc.msg} (column {exc.colno})")]
    except RecursionError:
        return [], [CatalogProblem("document", "", _TOO_DEEP)]
    except ValueError as exc:  # e.g. an integer literal longer than Python's int-string limit
        return [], [CatalogProblem("document", "", _big_number(exc))]
    return _from_object(obj, source_name)


def _jsonl(raw: bytes, source_name: str | None) -> tuple[list[_Pending], list[CatalogProblem]]:
    objects: list[tuple[str, Any]] = []
    problems: list[CatalogProblem] = []
    for lineno, line in enumerate(raw.splitlines(), 1):  # \n, \r\n or a lone \r
        if lineno == 1:
            line = line.removeprefix(b"\xef\xbb\xbf")
        if not line.strip():
            continue
        loc = f"line {lineno}"
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(
                CatalogProblem(
                    loc, "", f"not valid UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1})"
                )
            )
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(CatalogProblem(loc, "", f"invalid JSON: {exc.msg} (column {exc.colno})"))
            continue
        except RecursionError:
            problems.append(CatalogProblem(loc, "", _TOO_DEEP))
            continue
        except ValueError as exc:  # e.g. an integer literal longer than Python's int-string limit
            problems.append(CatalogProblem(loc, "", _big_number(exc)))
            continue
        if not isinstance(obj, dict):
            problems.append(
                CatalogProblem(loc, "", f"expected a JSON object (a Tool record), got {_kind(obj)}")
            )
            continue
        objects.append((loc, obj))
    pending, more = _from_items(objects, source_name, bare="openai")
    return pending, problems + more


def _from_object(obj: Any, source_name: str | None) -> tuple[list[_Pending], list[CatalogProblem]]:
    if is_openapi(obj):
        records, problems = openapi_records(obj, source_name)
        pending: list[_Pending] = [(loc, {"id": "", **rec}, {}) for loc, rec in records]
        _assign_ids(pending, list(range(len(pending))))
        return pending, problems
    if isinstance(obj, dict) and ("jsonrpc" in obj or "result" in obj or "error" in obj):
        if "error" in obj and obj.get("error") is not None:
            err = obj["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            return [], [CatalogProblem("error", "", f"the JSON-RPC response is an error: {msg}")]
        obj = obj.get("result")
    if isinstance(obj, dict):
        tools = obj.get("tools")
        if not isinstance(tools, list):
            found = ", ".join(sorted(map(str, obj))[:8]) or "nothing"
            return [], [
                CatalogProblem(
                    "top level",
                    "tools",
                    f"expected a tool list, an MCP tools/list result or JSONL; found an object with {found}",
                )
            ]
        # an MCP result, or a chat request body whose "tools" are OpenAI/Anthropic definitions
        return _from_items([(f"tools[{i}]", t) for i, t in enumerate(tools)], source_name, bare="mcp")
    if isinstance(obj, list):
        return _from_items([(f"item {i}", t) for i, t in enumerate(obj)], source_name, bare="openai")
    return [], [CatalogProblem("top level", "", f"expected a JSON list or object, got {_kind(obj)}")]


def _from_items(
    items: list[tuple[str, Any]], source_name: str | None, bare: str
) -> tuple[list[_Pending], list[CatalogProblem]]:
    """``bare``: the source of a bare ``{name, description, parameters}`` dict, which names no format."""
    pending: list[_Pending] = []
    problems: list[CatalogProblem] = []
    generated: list[int] = []  # positions in `pending` whose id we made up
    for loc, item in items:
        if not isinstance(item, dict):
            problems.append(CatalogProblem(loc, "", f"expected a JSON object, got {_kind(item)}"))
            continue
        kind = _item_kind(item)
        if kind == "tool":
            pending.append((loc, item, {}))
            continue
        converted = _convert(item, kind, loc, source_name or (bare if kind == "function" else kind))
        if isinstance(converted, CatalogProblem):
            problems.append(converted)
            continue
        generated.append(len(pending))
        pending.append(converted)
    _assign_ids(pending, generated)
    return pending, problems


def _item_kind(item: Mapping[str, Any]) -> str:
    """openai (Chat Completions or flat Responses API), mcp, anthropic, a bare function, or a Tool record."""
    if item.get("type") == "function" or isinstance(item.get("function"), dict):
        return "openai"
    if "inputSchema" in item:
        return "mcp"
    if "input_schema" in item and "id" not in item:
        return "anthropic"
    if "id" not in item and "name" in item and set(item) <= _FUNCTION_KEYS:
        return "function"
    return "tool"


def _convert(item: dict[str, Any], kind: str, loc: str, source: str) -> _Pending | CatalogProblem:
    """Map an OpenAI, Anthropic or MCP definition onto Tool fields; renames report errors in its own terms."""
    flat = kind != "openai" or ("function" not in item and "name" in item)  # the Responses API is flat
    prefix, body = ("", item) if flat else ("function.", item.get("function"))
    if not isinstance(body, dict):
        return CatalogProblem(loc, "function", "an OpenAI tool needs a 'function' object")
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        return CatalogProblem(loc, f"{prefix}name", "missing or empty tool name")
    params_key = {"mcp": "inputSchema", "anthropic": "input_schema"}.get(kind, "parameters")
    record: dict[str, Any] = {
        "id": "",
        "name": name,
        "description": body.get("description") if body.get("description") is not None else "",
        "source": source,
        "parameters": body.get(params_key) if body.get(params_key) is not None else {},
    }
    extra: dict[str, Any] = {}
    if kind == "mcp":
        extra = {k: item[k] for k in _MCP_EXTRA_KEYS if item.get(k) is not None}
        record["provider"] = source if source != "mcp" else None
    elif "strict" in body:
        extra["strict"] = body["strict"]
    if extra:
        record["extra"] = extra
    renames = {
        "name": f"{prefix}name",
        "description": f"{prefix}description",
        "parameters": f"{prefix}{params_key}",
    }
    return loc, record, renames


def _assign_ids(pending: list[_Pending], generated: list[int]) -> None:
    """``source:name``, with ``#n`` for repeats, skipping ids that explicit records already use."""
    gen = set(generated)
    taken = {str(rec.get("id")) for i, (_, rec, _) in enumerate(pending) if i not in gen}
    for i in generated:
        rec = pending[i][1]
        base = f"{rec['source']}:{rec['name'].strip()}"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}#{n}"
        taken.add(candidate)
        rec["id"] = candidate


def _validate(pending: list[_Pending], problems: list[CatalogProblem]) -> list[Tool]:
    tools: list[Tool] = []
    seen: dict[str, tuple[str, str]] = {}
    for loc, record, renames in pending:
        if _nested_deeper_than(record, MAX_NESTING):  # would break storing and encoding it later
            problems.append(CatalogProblem(loc, "", _TOO_DEEP))
            continue
        bad = _not_unicode(record)  # JSON may escape half a surrogate pair: no store can write it
        if bad is not None:
            field = clipped(str(renames.get(bad, bad)))
            problems.append(CatalogProblem(loc, field, "holds a lone surrogate: not valid Unicode text"))
            continue
        try:
            tool = Tool.model_validate(record)
        except ValidationError as exc:
            for err in exc.errors():
                parts = [clipped(str(x)) for x in err["loc"]]  # an unknown key is the caller's, any size
                if parts and parts[0] in renames:
                    parts[0] = renames[parts[0]]
                problems.append(CatalogProblem(loc, ".".join(parts), _reason(err)))
            continue
        clash = _clash(tool.id, loc, seen)
        if clash:
            problems.append(CatalogProblem(loc, "id", clash))
            continue
        tools.append(tool)
    return tools


def _clash(tool_id: str, loc: str, seen: dict[str, tuple[str, str]]) -> str | None:
    """Why ``tool_id`` clashes with an earlier one, else record it. Ids equal after Unicode NFC
    normalisation clash too: they look the same, so a user could never tell which one they meant."""
    key = unicodedata.normalize("NFC", tool_id)
    if key not in seen:
        seen[key] = (tool_id, loc)
        return None
    first_id, first_loc = seen[key]
    if first_id == tool_id:
        return f"duplicate id {tool_id!r} (first at {first_loc})"
    return (
        f"id {ascii(tool_id)} is id {ascii(first_id)} (at {first_loc}) in another Unicode normalisation; "
        "ids must differ in more than that"
    )


def _not_unicode(record: Mapping[str, Any]) -> str | None:
    """The first field of ``record`` holding a string (or a key) with a lone surrogate, else None."""
    for field, value in record.items():
        stack = [field, value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                if not item.isascii():
                    try:
                        item.encode("utf-8")
                    except UnicodeEncodeError:
                        return field
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, (list, tuple)):
                stack.extend(item)
    return None


def _nested_deeper_than(obj: Any, limit: int) -> bool:
    """True when lists/objects nest more than ``limit`` levels (iterative: no recursion limit to hit)."""
    stack = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _position(problem: CatalogProblem) -> int:
    """The line or item number a problem is at (``line 3``, ``item 3``, ``tools[3]``; -1 for any other
    location, such as a whole document's): reading the JSON, converting definitions and validating
    fields each find their own problems, and a reader wants them in the order of the file."""
    found = _NUMBERED.fullmatch(problem.location)
    return -1 if found is None else int(found["n"] or found["i"])


def _reason(err: Mapping[str, Any]) -> str:
    if err.get("type") == "extra_forbidden":
        return "unknown field (put custom data under 'extra')"
    if err.get("type") == "missing":
        return "required field is missing"
    if err.get("type") == "tuple_type":  # tags: say it in JSON's terms
        return "Input should be a list"
    return pydantic_reason(err)


def _big_number(exc: ValueError) -> str:
    """The one ValueError ``json`` raises that is not a JSONDecodeError: an over-long integer literal."""
    return "invalid JSON: " + str(exc).split(";")[0]


def _kind(obj: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(obj), "a number"
    )
