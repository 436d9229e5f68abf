"""Read a tool catalog in any of the formats agent developers already have, and write it back as JSONL.

Accepted inputs (detected, never guessed silently):

- JSONL: one ``Tool`` record per line (the native format, what ``save_catalog`` writes);
- a JSON list of ``Tool`` records;
- OpenAI-style tool definitions: ``[{"type": "function", "function": {"name", "description",
  "parameters"}}]`` or bare function dicts ``[{"name", "description", "parameters"}]``;
- an MCP ``tools/list`` result: ``{"tools": [{"name", "description", "inputSchema", ...}]}``, or the
  whole JSON-RPC response ``{"jsonrpc": "2.0", "id": 1, "result": {"tools": [...]}}``.

OpenAI and MCP definitions carry no id: one is made as ``"<source>:<name>"`` (``source`` defaults to
``openai`` / ``mcp``; pass the server name to keep ids apart across servers), and a repeated name gets
``#2``, ``#3`` in order of appearance, so ids are stable as long as the list order is. Every problem in the
input is collected (location, field, reason) and raised together as one ``CatalogError``: a catalog is
either loaded whole or rejected, never half-loaded, and duplicate ids are an error, not an overwrite.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rated.catalog.schema import Tool
from rated.errors import CatalogError, CatalogProblem
from rated.paths import atomic_path

__all__ = ["load_catalog", "save_catalog"]

MAX_NESTING = 64  # JSON-schema parameters nest a few levels; hundreds mean a broken or hostile file
_TOO_DEEP = f"nested more than {MAX_NESTING} levels deep"

_FUNCTION_KEYS = frozenset({"name", "description", "parameters", "strict"})
_MCP_EXTRA_KEYS = ("title", "outputSchema", "annotations", "_meta")

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
            try:
                raw = path.read_bytes()
            except OSError as exc:
                raise CatalogError(f"cannot read catalog file ({exc.strerror})", path=path_label) from None
        force_jsonl = path_label is not None and path_label.endswith(".jsonl")
        pending, problems = _from_bytes(raw, force_jsonl, source_name)
    tools = _validate(pending, problems)
    if problems:
        raise CatalogError(f"invalid catalog: {len(problems)} problem(s)", problems, path=path_label)
    if not tools:
        raise CatalogError("the catalog holds no tools", path=path_label)
    return tools


def save_catalog(tools: Iterable[Tool], path: str | Path) -> Path:
    """Write ``tools`` as JSONL (atomically: a crash never leaves half a file); duplicate ids are refused."""
    tools = list(tools)
    seen: dict[str, int] = {}
    problems = []
    for i, tool in enumerate(tools):
        if tool.id in seen:
            problems.append(
                CatalogProblem(f"item {i}", "id", f"duplicate id {tool.id!r} (first at item {seen[tool.id]})")
            )
        seen.setdefault(tool.id, i)
    out = Path(path).expanduser()
    if problems:
        raise CatalogError("refusing to save a catalog with duplicate ids", problems, path=str(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp, tmp.open("w", encoding="utf-8") as fh:
        for tool in tools:
            fh.write(tool.model_dump_json(exclude_defaults=True) + "\n")
    return out


# --------------------------------------------------------------------------------------------- parsing


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
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            return _jsonl(raw) if _first_line_is_object(stripped) else _whole_json(raw, source_name)
        return _from_object(obj, source_name)
    if not stripped:
        return [], []
    if force_jsonl:
        return _jsonl(raw)
    return _whole_json(raw, source_name)


def _first_line_is_object(stripped: bytes) -> bool:
    """JSONL rather than one broken JSON document: one of the first few lines is a complete object."""
    lines = [ln for ln in stripped.split(b"\n", 6)[:6] if ln.strip()]
    for line in lines[:5]:
        try:
            if isinstance(json.loads(line), dict):
                return True
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            continue
    return False


def _whole_json(raw: bytes, source_name: str | None) -> tuple[list[_Pending], list[CatalogProblem]]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return [], [CatalogProblem(f"line {line}", "", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})")]
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [CatalogProblem(f"line {exc.lineno}", "", f"invalid JSON: {exc.msg} (column {exc.colno})")]
    except RecursionError:
        return [], [CatalogProblem("document", "", _TOO_DEEP)]
    return _from_object(obj, source_name)


def _jsonl(raw: bytes) -> tuple[list[_Pending], list[CatalogProblem]]:
    pending: list[_Pending] = []
    problems: list[CatalogProblem] = []
    for lineno, line in enumerate(raw.split(b"\n"), 1):
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
        if not isinstance(obj, dict):
            problems.append(
                CatalogProblem(loc, "", f"expected a JSON object (a Tool record), got {_kind(obj)}")
            )
            continue
        pending.append((loc, obj, {}))
    return pending, problems


def _from_object(obj: Any, source_name: str | None) -> tuple[list[_Pending], list[CatalogProblem]]:
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
        return _from_items(tools, "tools[{}]", source_name, default_source="mcp")
    if isinstance(obj, list):
        return _from_items(obj, "item {}", source_name, default_source=None)
    return [], [CatalogProblem("top level", "", f"expected a JSON list or object, got {_kind(obj)}")]


def _from_items(
    items: list[Any], loc_fmt: str, source_name: str | None, default_source: str | None
) -> tuple[list[_Pending], list[CatalogProblem]]:
    pending: list[_Pending] = []
    problems: list[CatalogProblem] = []
    generated: list[int] = []  # positions in `pending` whose id we made up
    for i, item in enumerate(items):
        loc = loc_fmt.format(i)
        if not isinstance(item, dict):
            problems.append(CatalogProblem(loc, "", f"expected a JSON object, got {_kind(item)}"))
            continue
        kind = _item_kind(item)
        if kind == "tool":
            pending.append((loc, item, {}))
            continue
        converted = _convert(
            item, kind, loc, source_name or default_source or ("mcp" if kind == "mcp" else "openai")
        )
        if isinstance(converted, CatalogProblem):
            problems.append(converted)
            continue
        generated.append(len(pending))
        pending.append(converted)
    _assign_ids(pending, generated)
    return pending, problems


def _item_kind(item: Mapping[str, Any]) -> str:
    if item.get("type") == "function" or isinstance(item.get("function"), dict):
        return "openai"
    if "inputSchema" in item:
        return "mcp"
    if "id" not in item and "name" in item and set(item) <= _FUNCTION_KEYS:
        return "function"
    return "tool"


def _convert(item: dict[str, Any], kind: str, loc: str, source: str) -> _Pending | CatalogProblem:
    """Map an OpenAI or MCP definition onto Tool fields; renames say how to report errors in its own terms."""
    if kind == "openai":
        fn = item.get("function")
        if not isinstance(fn, dict):
            return CatalogProblem(loc, "function", "an OpenAI tool needs a 'function' object")
        prefix, body = "function.", fn
    else:
        prefix, body = "", item
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        return CatalogProblem(loc, f"{prefix}name", "missing or empty tool name")
    params_key = "inputSchema" if kind == "mcp" else "parameters"
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
    first_seen: dict[str, str] = {}
    for loc, record, renames in pending:
        if _nested_deeper_than(record, MAX_NESTING):  # would break storing and encoding it later
            problems.append(CatalogProblem(loc, "", _TOO_DEEP))
            continue
        try:
            tool = Tool.model_validate(record)
        except ValidationError as exc:
            for err in exc.errors():
                parts = [str(x) for x in err["loc"]]
                if parts and parts[0] in renames:
                    parts[0] = renames[parts[0]]
                problems.append(CatalogProblem(loc, ".".join(parts), _reason(err)))
            continue
        if tool.id in first_seen:
            problems.append(
                CatalogProblem(loc, "id", f"duplicate id {tool.id!r} (first at {first_seen[tool.id]})")
            )
            continue
        first_seen[tool.id] = loc
        tools.append(tool)
    return tools


def _nested_deeper_than(obj: Any, limit: int) -> bool:
    """True when lists/objects nest more than ``limit`` levels (iterative: no recursion limit to hit)."""
    stack = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
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


def _reason(err: Mapping[str, Any]) -> str:
    msg = str(err["msg"])
    if err.get("type") == "extra_forbidden":
        return "unknown field (put custom data under 'extra')"
    if err.get("type") == "missing":
        return "required field is missing"
    return msg


def _kind(obj: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(obj), "a number"
    )
