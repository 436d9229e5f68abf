"""Tools an agent holds as live Python objects, as ``Tool`` records: read by duck typing, so no agent
framework is imported (nor needs to be installed) to read its tools.

What each object is taken for, in this order:

- a ``Tool``: as it is; a dict: a catalog record or an OpenAI, Anthropic or MCP definition, read by
  ``load_catalog`` (one tool per dict: load whole documents, such as an OpenAPI file, with it first);
- an MCP tool (``mcp.types.Tool``: ``name``, ``description``, ``inputSchema``), read as its definition;
- a LangChain tool (``langchain_core.tools.BaseTool``: ``name``, ``description``, ``invoke``, and
  ``tool_call_schema`` (the arguments a model gives, injected ones left out) or ``args_schema``; a
  single-input ``Tool`` without ``args_schema`` takes one string, ``__arg1``, as LangChain sends it);
- a LlamaIndex tool (``metadata``: a ``ToolMetadata`` with ``name``, ``description`` and ``fn_schema`` or
  ``get_parameters_dict()``, and ``call``);
- a CrewAI tool (``crewai.tools.BaseTool``: ``name``, ``description``, ``args_schema``, ``run``);
- any other callable (a function, a bound method, a ``functools.partial``, an object with ``__call__``):
  its ``__name__`` (a callable object's class name), its docstring's prose, and the JSON schema of its
  signature (``rated.catalog.signature``).

A tool's id is its name, unless the object names one (a ``Tool`` or a record dict with an ``id``);
``source`` is what the object is (``python``, ``langchain``, ``llamaindex``, ``crewai``, ``mcp``; a
definition dict's format) unless ``source=`` says otherwise, and ``provider=`` is the provider of every
tool that names none. Every problem is collected and raised as one ``CatalogError`` naming each object's
position (``item 3``): an object that is none of the above (and its type), a name used twice, a
signature that cannot be written as JSON schema.

>>> def get_weather(city: str, unit: str = "celsius") -> str:
...     '''Current weather for a city.'''
>>> [tool] = tools_from_objects([get_weather])
>>> tool.id, tool.source, tool.description, tool.parameters["required"]
('get_weather', 'python', 'Current weather for a city.', ['city'])
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from rated.catalog.loaders import load_catalog
from rated.catalog.openapi import is_openapi
from rated.catalog.schema import Tool
from rated.catalog.signature import (
    SignatureError,
    docstring_prose,
    model_schema,
    param_docs,
    signature_schema,
)
from rated.errors import CatalogError, CatalogProblem, ConfigError
from rated.shown import shown

__all__ = ["KINDS", "ToolObject", "read_objects", "tools_from_objects"]

# what an object was read as; the first four can be called (``rated.toolbox``, ``rated.object_calls``),
# the last two cannot
KINDS = ("python", "langchain", "llamaindex", "crewai", "mcp", "definition")
_EXPECTED = (
    "expected a function or other callable, a LangChain, LlamaIndex or CrewAI tool, an MCP Tool, "
    "a rated Tool or a catalog dict"
)

_ITEM = re.compile(r"\bitem (\d+)")
_SINGLE_INPUT = "__arg1"  # the one argument of a single-input LangChain tool, as LangChain names it
_DOCUMENT = "a whole catalog: read it with rated.catalog.load_catalog and pass its tools"


class ToolObject(NamedTuple):
    """One object read: its ``Tool``, the object itself and what it was read as (one of ``KINDS``)."""

    tool: Tool
    obj: Any
    kind: str


def tools_from_objects(
    objects: Iterable[Any], *, source: str | None = None, provider: str | None = None
) -> list[Tool]:
    """The ``Tool`` of each object, in order (see the module doc); ``CatalogError`` listing every problem."""
    return [read.tool for read in read_objects(objects, source=source, provider=provider)]


def read_objects(
    objects: Iterable[Any], *, source: str | None = None, provider: str | None = None
) -> list[ToolObject]:
    """``tools_from_objects``, keeping each object and what it was read as (for ``rated.toolbox``)."""
    if isinstance(objects, (str, bytes, Mapping)) or not isinstance(objects, Iterable):
        raise CatalogError(f"expected a list of tool objects, got a {type(objects).__name__}: pass [it]")
    for name, value in (("source", source), ("provider", provider)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{name} must be a non-empty string, got {shown(value)}")
    items = list(objects)
    if not items:
        raise CatalogError("no tool objects given")
    read: list[tuple[int, dict[str, Any], str]] = []  # position, record, kind
    problems: list[CatalogProblem] = []
    for i, obj in enumerate(items):
        loc = f"item {i}"
        try:
            record, kind = _read(obj, source, loc)
        except _Unreadable as exc:
            problems.extend(exc.problems)
            continue
        except Exception as exc:  # a property of the framework's own that raised while being read
            problems.append(CatalogProblem(loc, "", f"{_what(obj)} could not be read: {shown(exc)}"))
            continue
        if provider is not None and record.get("provider") is None:
            record["provider"] = provider
        read.append((i, record, kind))
    tools: list[Tool] = []
    try:  # validated as a catalog's records: each field, the nesting, duplicate ids
        tools = load_catalog([record for _, record, _ in read]) if read else []
    except CatalogError as exc:  # its "item j" is the j-th record read: name the object's own position
        at = [i for i, _, _ in read]
        problems += [
            CatalogProblem(_moved(p.location, at), p.field, _moved(p.reason, at)) for p in exc.problems
        ]
    if problems:
        problems.sort(key=lambda p: int(_ITEM.search(p.location).group(1)))  # type: ignore[union-attr]
        raise CatalogError(f"cannot read the tool objects: {len(problems)} problem(s)", problems)
    return [ToolObject(t, items[i], kind) for t, (i, _, kind) in zip(tools, read, strict=True)]


def _moved(text: str, positions: list[int]) -> str:
    return _ITEM.sub(lambda m: f"item {positions[int(m.group(1))]}", text)


class _Unreadable(Exception):
    def __init__(self, problems: list[CatalogProblem]):
        self.problems = problems


def _read(obj: Any, source: str | None, loc: str) -> tuple[dict[str, Any], str]:
    """The record of one object (for ``Tool.model_validate``) and what it was read as."""
    if isinstance(obj, Tool):
        return obj.model_dump(mode="json"), "definition"
    if isinstance(obj, Mapping):
        return _from_dict(dict(obj), source, loc, keep_id="id" in obj), "definition"
    if isinstance(obj, type):
        raise _Unreadable([CatalogProblem(loc, "", f"a class ({obj.__qualname__}): pass an instance")])
    if callable(_get(obj, "invoke")) and (_has(obj, "tool_call_schema") or _has(obj, "args_schema")):
        if is_single_input_langchain_tool(obj):  # one string, named as LangChain's bind_tools sends it
            schema = {"type": "object", "properties": {_SINGLE_INPUT: {"type": "string"}}}
            schema["required"] = [_SINGLE_INPUT]
        else:
            schema = _get(obj, "tool_call_schema") or _get(obj, "args_schema")
        if schema is None:  # no model: LangChain's own reading of the arguments
            schema = {"type": "object", "properties": dict(_get(obj, "args") or {})}
        return _record(obj, loc, obj.name, obj.description, schema, source or "langchain"), "langchain"
    if isinstance(_get(obj, "inputSchema") or _get(obj, "input_schema"), Mapping):  # an MCP Tool: a dict
        return _from_dict(_mcp_definition(obj), source or "mcp", loc, keep_id=False), "mcp"
    metadata = _get(obj, "metadata")
    if (
        metadata is not None
        and not isinstance(metadata, Mapping)
        and callable(_get(obj, "call"))
        and (_has(metadata, "fn_schema") or callable(_get(metadata, "get_parameters_dict")))
    ):
        schema = _get(metadata, "fn_schema")
        if schema is None:  # LlamaIndex's own reading: one string argument, "input"
            schema = metadata.get_parameters_dict()
        name, text = metadata.name, metadata.description
        return _record(obj, loc, name, text, schema, source or "llamaindex"), "llamaindex"
    if callable(_get(obj, "run")) and _has(obj, "args_schema") and _has(obj, "name"):
        schema = obj.args_schema or {"type": "object", "properties": {}}
        return _record(obj, loc, obj.name, obj.description, schema, source or "crewai"), "crewai"
    if callable(obj):
        return _from_callable(obj, source, loc), "python"
    raise _Unreadable([CatalogProblem(loc, "", f"cannot read {_what(obj)} as a tool; {_EXPECTED}")])


def is_single_input_langchain_tool(obj: Any) -> bool:
    """A LangChain ``Tool`` without ``args_schema`` (``Tool(name, func, description)``): it takes one string
    under any name, and its ``tool_call_schema`` describes ``Tool._run``'s own signature, not that string
    (LangChain's ``convert_to_openai_tool`` special-cases it likewise)."""
    return _get(obj, "args_schema") is None and _get(obj, "args") == {"tool_input": {"type": "string"}}


def _from_callable(fn: Any, source: str | None, loc: str) -> dict[str, Any]:
    target = fn.func if isinstance(fn, functools.partial) else fn  # its name and docstring
    name = getattr(target, "__name__", None)
    if not isinstance(name, str):
        name = type(target).__name__  # an object with __call__: its class names it
    if name.startswith("<"):
        raise _Unreadable([CatalogProblem(loc, "name", f"a {name} has no name: define the tool with def")])
    doc = inspect.getdoc(target)
    try:
        parameters = signature_schema(fn, param_docs(doc))
    except SignatureError as exc:
        raise _Unreadable([CatalogProblem(loc, "parameters", f"{name}(): {exc}")]) from None
    return _record(fn, loc, name, docstring_prose(doc), parameters, source or "python")


def _from_dict(item: dict[str, Any], source: str | None, loc: str, keep_id: bool) -> dict[str, Any]:
    """One dict as ``load_catalog`` reads it; a definition's id is its name (``load_catalog`` would
    prefix its source, as it does for files, where definitions of several servers meet)."""
    if isinstance(item.get("tools"), list) or is_openapi(item) or "jsonrpc" in item or "result" in item:
        raise _Unreadable([CatalogProblem(loc, "", _DOCUMENT)])
    try:
        [tool] = load_catalog([item], source_name=source)
    except CatalogError as exc:
        raise _Unreadable([CatalogProblem(loc, p.field, p.reason) for p in exc.problems]) from None
    record = tool.model_dump(mode="json")
    if not keep_id:
        record["id"] = tool.name
    return record


def _mcp_definition(obj: Any) -> dict[str, Any]:
    """An MCP ``Tool`` as its ``tools/list`` entry (pydantic models of the ``mcp`` package, 1.x or 2.x)."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dict(dump(by_alias=True, exclude_none=True, mode="json"))
    schema = getattr(obj, "inputSchema", None) or getattr(obj, "input_schema", None)
    return {"name": obj.name, "description": getattr(obj, "description", None), "inputSchema": schema}


def _record(obj: Any, loc: str, name: Any, description: Any, schema: Any, source: str) -> dict[str, Any]:
    """A record from what the object says: ``schema`` is a framework's argument model (or a dict)."""
    if not isinstance(name, str) or not name.strip():
        raise _Unreadable([CatalogProblem(loc, "name", f"{_what(obj)} has no name")])
    try:
        parameters = model_schema(schema)
    except SignatureError as exc:
        raise _Unreadable([CatalogProblem(loc, "parameters", f"tool {name.strip()!r}: {exc}")]) from None
    text = inspect.cleandoc(description) if isinstance(description, str) else description
    return {
        "id": name.strip(),
        "name": name,
        "description": "" if text is None else text,
        "source": source,
        "parameters": parameters,
    }


def _has(obj: Any, name: str) -> bool:
    """``hasattr``, also False when reading the attribute raises something else (a framework property)."""
    try:
        getattr(obj, name)
    except Exception:
        return False
    return True


def _get(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)``, also None when reading it raises (a framework property)."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _what(obj: Any) -> str:
    cls = type(obj)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    return f"an object of type {name}"
