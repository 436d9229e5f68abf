"""Retrieved tools as the definitions a model API takes, and the way back from a called name to a tool id.

An agent hands the tools rated found to its LLM in the API's own function-calling format, then reports
the call with the tool's id. The conversion is easy but for names: OpenAI and Anthropic accept only
``^[a-zA-Z0-9_-]{1,64}$`` (MCP, since its 2025-11-25 revision, ``[A-Za-z0-9_.-]`` up to 128), while rated
ids look like ``gmail.send`` or ``n8n:Slack/send message``, and two retrieved tools may share a name.
``tool_definitions`` therefore issues the names itself and keeps the mapping:

- a tool is called by its own ``name`` when that is valid and no other tool of the list has it;
- else by its name made valid (accents dropped, other characters runs of ``_``, cut to the limit);
- tools whose names still clash are called by their ids made valid (``github_search``, ``jira_search``),
  and those that clash even so by that plus ``_`` and 8 hex digits of a hash of the id.

A tool's name thus depends on the set of tools in the list, never on their order, and is the same in
every process. ``ToolDefinitions.tool_id(name)`` maps the name the model called back to the tool id for
``feedback`` and ``track``, and refuses a name it did not issue (``UnknownToolNameError``).

Parameters are always a JSON-schema object, as the APIs require: none becomes ``{"type": "object",
"properties": {}}``, a schema without ``type`` (or with BFCL's ``"dict"``) is typed ``object``, an object
without ``properties`` (or with ``null`` ones) gets empty ones (OpenAI refuses it otherwise), a
``required`` that is not a list of names is made one, a schema that only references one of its own
definitions is that definition, and a schema of another type (a catalog defect)
becomes the single required argument ``input`` (its ``$defs``/``definitions`` kept at the root). Each
schema below the root (in ``properties``, ``items``, ``additionalProperties``, ``anyOf``/``oneOf``/``allOf``,
``$defs`` and their like, at any depth up to 100 levels) is repaired likewise: a bare type name
(``"properties": {"a": "string"}``) becomes ``{"type": "string"}``, BFCL's and Python's type names
(``dict``, ``float``, ``tuple``, ``int``, ``str``, ``bool``, ``list``; ``any``: no type) JSON schema's, a
value that is no schema (``null``, a number) ``{}`` (any value), and ``properties`` and ``required`` as at
the root; a valid schema is kept as it is.
Descriptions are cut to 1,024 characters for OpenAI, the limit its API enforced (OpenAI-compatible
servers still may); ``max_description`` changes it. Loading the definitions back with ``load_catalog``
gives the same names, descriptions and parameters (OpenAI's ``strict`` and MCP's ``title``,
``annotations``, ``outputSchema`` and ``_meta`` included).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, get_args

from rated.catalog.schema import Tool
from rated.errors import ConfigError, UnknownToolError, UnknownToolNameError
from rated.shown import shown

__all__ = [
    "FORMATS",
    "ExportFormat",
    "ToolDefinitions",
    "anthropic_tools",
    "mcp_tools",
    "openai_responses_tools",
    "openai_tools",
    "tool_definitions",
]

ExportFormat = Literal["openai", "openai_responses", "anthropic", "mcp"]
FORMATS: tuple[str, ...] = get_args(ExportFormat)

_DEFINITIONS = ("$defs", "definitions")  # where JSON-schema references point ("#/$defs/name")
_HASH_DIGITS = 8  # 32 bits: a clash between two ids of one list is then a one-in-four-billion event


@dataclass(frozen=True)
class _Rules:
    """What one API accepts: the characters of a name (a regex character class), its length, and the
    longest description (None: no limit)."""

    chars: str
    max_name: int
    max_description: int | None

    def valid(self, name: str) -> bool:
        return 0 < len(name) <= self.max_name and re.fullmatch(f"[{self.chars}]+", name) is not None


_OPENAI = _Rules("A-Za-z0-9_-", 64, 1024)
_RULES: dict[str, _Rules] = {
    "openai": _OPENAI,
    "openai_responses": _OPENAI,
    "anthropic": _Rules("A-Za-z0-9_-", 64, None),
    "mcp": _Rules("A-Za-z0-9_.-", 128, None),
}


@dataclass(frozen=True)
class ToolDefinitions:
    """Definitions for one API (``definitions``, in the order of the tools given, one per tool id) and
    the names they were issued under: pass ``definitions`` as the request's ``tools``, then map the name
    the model called back with ``tool_id(name)``."""

    format: str
    definitions: list[dict[str, Any]]
    tools: tuple[Tool, ...]  # aligned with definitions
    names: Mapping[str, str]  # tool id -> the name it is called by
    _by_name: Mapping[str, Tool] = field(repr=False)

    def tool_id(self, name: str) -> str:
        """The id of the tool the model called by ``name``; ``UnknownToolNameError`` for a name these
        definitions did not issue (made up by the model, or issued for another list)."""
        return self.tool(name).id

    def tool(self, name: str) -> Tool:
        """The tool the model called by ``name`` (its endpoint, auth, ...), as ``tool_id`` finds it."""
        try:
            return self._by_name[name]
        except (KeyError, TypeError):  # TypeError: an unhashable "name" from a malformed call
            raise UnknownToolNameError(name, list(self._by_name)) from None

    def name(self, tool_id: str) -> str:
        """The name the model calls the tool ``tool_id`` by; ``UnknownToolError`` if it is not listed."""
        try:
            return self.names[tool_id]
        except (KeyError, TypeError):
            raise UnknownToolError(tool_id) from None

    def __len__(self) -> int:
        return len(self.definitions)


def tool_definitions(
    tools: Iterable[Any], format: ExportFormat = "openai", *, max_description: int | None = None
) -> ToolDefinitions:
    """``tools`` (``Tool`` objects, or the ``Hit`` objects ``retrieve`` returns) as definitions for
    ``format``: ``openai`` (Chat Completions), ``openai_responses``, ``anthropic`` or ``mcp``.

    A tool listed twice (hits of two queries merged) is defined once, where it first appears.
    ``max_description`` overrides the format's description limit (1,024 characters for OpenAI, none
    for the others).
    """
    rules = _RULES.get(format) if isinstance(format, str) else None
    if rules is None:
        raise ConfigError(f"unknown tool format {shown(format)}: use one of {', '.join(FORMATS)}")
    limit = rules.max_description if max_description is None else max_description
    if limit is not None and limit < 1:
        raise ConfigError(f"max_description must be at least 1, got {limit}")
    unique: dict[str, Tool] = {}
    for item in tools:
        tool = _as_tool(item)
        unique.setdefault(tool.id, tool)
    listed = tuple(unique.values())
    issued = _issue_names(listed, rules)
    names = {t.id: issued[t.id] for t in listed}  # in the order of the list
    definitions = [_definition(t, names[t.id], format, _clip(t.description, limit)) for t in listed]
    by_name = {names[t.id]: t for t in listed}
    return ToolDefinitions(format, definitions, listed, names, by_name)


def openai_tools(tools: Iterable[Any], *, max_description: int | None = None) -> ToolDefinitions:
    """OpenAI Chat Completions: ``{"type": "function", "function": {name, description, parameters}}``."""
    return tool_definitions(tools, "openai", max_description=max_description)


def openai_responses_tools(tools: Iterable[Any], *, max_description: int | None = None) -> ToolDefinitions:
    """OpenAI Responses API (flat): ``{"type": "function", "name", "description", "parameters"}``."""
    return tool_definitions(tools, "openai_responses", max_description=max_description)


def anthropic_tools(tools: Iterable[Any], *, max_description: int | None = None) -> ToolDefinitions:
    """Anthropic Messages API: ``{"name", "description", "input_schema"}``."""
    return tool_definitions(tools, "anthropic", max_description=max_description)


def mcp_tools(tools: Iterable[Any], *, max_description: int | None = None) -> ToolDefinitions:
    """MCP ``tools/list`` entries: ``{"name", "description", "inputSchema"}``."""
    return tool_definitions(tools, "mcp", max_description=max_description)


# ----------------------------------------------------------------------------------------------- names


def _as_tool(item: Any) -> Tool:
    """A ``Tool``, or the tool of a ``Hit`` (anything with a ``.tool``: no import of the retriever here)."""
    tool = item if isinstance(item, Tool) else getattr(item, "tool", None)
    if not isinstance(tool, Tool):
        raise TypeError(f"expected Tool or Hit objects, got {type(item).__name__}")
    return tool


def _issue_names(tools: tuple[Tool, ...], rules: _Rules) -> dict[str, str]:
    """tool id -> name, unique over ``tools``, valid for ``rules``, and independent of their order: each
    round proposes a name per pending tool and settles those no other tool wants or holds."""
    rounds: list[Callable[[Tool], str]] = [
        lambda t: t.name if rules.valid(t.name) else _sanitized(t.name, rules, rules.max_name),
        lambda t: _sanitized(t.id, rules, rules.max_name),
        *(partial(_hashed, rules=rules, digits=d) for d in (_HASH_DIGITS, 16, 32)),
    ]
    names: dict[str, str] = {}
    pending = list(tools)
    for propose in rounds:
        if not pending:
            break
        wanted = {t.id: propose(t) for t in pending}
        counts = Counter(wanted.values())
        taken = set(names.values())
        for t in pending:
            if counts[wanted[t.id]] == 1 and wanted[t.id] not in taken:
                names[t.id] = wanted[t.id]
        pending = [t for t in pending if t.id not in names]
    for t in sorted(pending, key=lambda t: t.id):  # only names crafted to match others' hashes get here
        n = 2
        while (name := _hashed(t, rules, _HASH_DIGITS, f"_{n}")) in names.values():
            n += 1
        names[t.id] = name
    return names


def _sanitized(text: str, rules: _Rules, limit: int) -> str:
    """``text`` made valid: accents dropped, each run of other characters one ``_``, cut to ``limit``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    name = re.sub(f"[^{rules.chars}]+", "_", ascii_text)
    name = re.sub("_{2,}", "_", name).strip("_")[:limit].rstrip("_")
    return name or "tool"


def _hashed(tool: Tool, rules: _Rules, digits: int, tail: str = "") -> str:
    """The id made valid, cut to leave room for ``_``, ``digits`` hex digits of its hash, and ``tail``."""
    digest = hashlib.blake2b(tool.id.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    stem = _sanitized(tool.id, rules, rules.max_name - digits - 1 - len(tail))
    return f"{stem}_{digest[:digits]}{tail}"


# --------------------------------------------------------------------------------------------- content


def _clip(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "\u2026"


def _definition(tool: Tool, name: str, format: str, description: str) -> dict[str, Any]:
    schema = _object_schema(tool.parameters)
    if format == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if format == "mcp":
        out: dict[str, Any] = {"name": name, "description": description, "inputSchema": schema}
        for key, kind in (("title", str), ("outputSchema", dict), ("annotations", dict), ("_meta", dict)):
            if isinstance(tool.extra.get(key), kind):
                out[key] = tool.extra[key]
        return out
    function: dict[str, Any] = {"name": name, "description": description, "parameters": schema}
    if isinstance(tool.extra.get("strict"), bool):
        function["strict"] = tool.extra["strict"]
    if format == "openai_responses":
        return {"type": "function", **function}
    return {"type": "function", "function": function}


def _object_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` as the JSON-schema object every function-calling API requires (a copy)."""
    parameters = _named_root(parameters)
    schema = dict(parameters)
    kind = schema.pop("type", "object")
    if kind == "dict" or (isinstance(kind, list) and "object" in kind):  # BFCL's name; ["object", "null"]
        kind = "object"
    if kind != "object":  # a schema of one value: the APIs take named arguments, so it is the one, "input"
        value = dict(parameters)
        # its definitions stay at the root, where its "#/$defs/..." references point
        defs = {key: value.pop(key) for key in _DEFINITIONS if key in value}
        # closed, as OpenAI's strict mode requires of every object (and true of this one in any mode)
        wrapper = {"properties": {"input": value}, "required": ["input"], "additionalProperties": False}
        return _repaired({"type": "object", **wrapper, **defs}, 0)
    # OpenAI and Anthropic refuse "properties" that is not an object (null, a list) and "required" that
    # is not a list of names: the first becomes empty, a lone name a list of it, other values are dropped
    properties = schema.pop("properties", None)
    out = {"type": "object", "properties": properties if isinstance(properties, Mapping) else {}, **schema}
    return _repaired(out, 0)


# JSON schema's types, and the names some catalogs write instead (BFCL's "dict", "float" and "tuple",
# Python's); "any" means no type constraint
_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_TYPE_NAMES = {"dict": "object", "float": "number", "tuple": "array"}
_TYPE_NAMES.update({"int": "integer", "str": "string", "bool": "boolean", "list": "array"})
# the keywords whose values are schemas: one, a list of them, or a mapping of names to them
_ONE_SCHEMA = ("items", "additionalProperties", "additionalItems", "not", "contains", "propertyNames")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_MAX_DEPTH = 100  # schemas below this many levels are passed as they are (no recursion limit reached)


def _repaired(schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
    """A copy of ``schema`` with its type name, ``required`` and every schema it holds (``_subschema``)
    made what the APIs take; what is valid is kept as it is."""
    out = dict(schema)
    kind = out.get("type")
    if kind == "any":
        del out["type"]
    elif isinstance(kind, str):
        out["type"] = _type_name(kind)
    elif isinstance(kind, list):
        out["type"] = [_type_name(k) if isinstance(k, str) else k for k in kind]
    if "required" in out:
        required = out.pop("required")
        if isinstance(required, str):
            out["required"] = [required]
        elif isinstance(required, list):
            out["required"] = [name for name in required if isinstance(name, str)]
    if depth >= _MAX_DEPTH:
        return out
    below = partial(_subschema, depth=depth + 1)
    for key in _ONE_SCHEMA:
        if key in out:
            value = out[key]  # "items": [...] is the tuple form of drafts 4 to 2019-09
            out[key] = [below(v) for v in value] if key == "items" and _is_list(value) else below(value)
    for key in _SCHEMA_LISTS:
        if key in out:
            value = out.pop(key)
            if isinstance(value, Mapping):  # one schema where a list of them belongs
                value = [value]
            if _is_list(value):
                out[key] = [below(v) for v in value]
    for key in _SCHEMA_MAPS:
        if key in out:
            value = out[key]
            out[key] = {name: below(v) for name, v in value.items()} if isinstance(value, Mapping) else {}
    return out


def _subschema(value: Any, depth: int) -> Any:
    """A schema below the root as the APIs take it: a bare type name (``"string"``, or a list of them)
    is ``{"type": ...}``, a value that is no schema (``null``, a number) ``{}`` (any value), a mapping
    ``_repaired``; ``true`` and ``false`` (any value, none) are schemas as they are."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return {} if value == "any" else {"type": _type_name(value)}
    if _is_list(value) and value and all(isinstance(v, str) for v in value):  # ["string", "null"]
        return {"type": [_type_name(v) for v in value]}
    if not isinstance(value, Mapping):
        return {}
    return _repaired(value, depth)


def _type_name(name: str) -> str:
    return name if name in _TYPES else _TYPE_NAMES.get(name, name)


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _named_root(parameters: Mapping[str, Any]) -> Mapping[str, Any]:
    """A schema that is only a reference to one of its own definitions (``{"$ref": "#/definitions/Args",
    "definitions": {...}}``, as zod-to-json-schema writes a named schema) as the schema it names, its
    definitions kept: the APIs read the arguments' object at the root, not behind a reference."""
    ref = parameters.get("$ref")
    if not isinstance(ref, str):
        return parameters
    for key in _DEFINITIONS:
        defs, prefix = parameters.get(key), f"#/{key}/"
        target = (
            defs.get(ref[len(prefix) :]) if ref.startswith(prefix) and isinstance(defs, Mapping) else None
        )
        if isinstance(target, Mapping):
            return {**target, **{k: v for k, v in parameters.items() if k != "$ref"}}
    return parameters
