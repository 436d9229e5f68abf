"""How each kind of tool object is called, and what is checked before it runs: the calls of
``rated.toolbox.Toolbox.run`` / ``arun`` on the objects ``rated.catalog.objects`` read (a ``ToolObject``),
inside the ``TrackedCall`` that reports their outcome. What the framework does not check is checked here
first: a caller error, reported before the tool runs.

- a function: ``fn(**arguments)``, each argument converted to its parameter's annotation as pydantic
  validates a model field (ISO text to a ``datetime``, a value to its enum member, an object to the
  model or dataclass named), so that the function gets what its schema promised; a value that does not
  fit, or names that do not bind, are a caller error. ``arun`` awaits coroutine functions and runs
  other functions in a worker thread (a plain ``functools.wraps`` wrapper of a coroutine function too:
  the coroutine it returns is awaited).
- a LangChain tool: ``invoke(arguments)`` (``ainvoke``), which validates them against a pydantic
  ``args_schema``; without one (a dict schema, none), missing and unknown names are checked here, and a
  single-input ``Tool`` takes exactly one argument. A tool that answers errors as text
  (``handle_tool_error`` / ``handle_validation_error``) returns that text as LangChain does, and the call
  is reported as what it was: the ``ToolException``'s outcome (``tool_error``, or its cause's), or a
  caller error; for this the call runs on a copy of the tool (``model_copy``) whose handlers note it, so
  an attribute the tool rebinds on itself while running is lost. What ``invoke`` returns is the result:
  the content alone for ``response_format="content_and_artifact"`` (invoke the tool with a tool call
  inside ``track`` for the artifact). Arguments LangChain injects (``InjectedToolArg``) are the caller's
  to add to ``arguments``; a tool that takes the model's tool call id (``InjectedToolCallId``) is refused
  (it runs only with the whole tool call).
- a LlamaIndex tool: ``call(**arguments)`` (``acall``), after validating them against its ``fn_schema``
  and checking their names against its function (with its ``partial_params``), which LlamaIndex does
  not; a ``ToolOutput`` with ``is_error`` set reports its exception's outcome. A tool taking a workflow
  ``Context`` is refused.
- a CrewAI tool: ``run(**arguments)`` (``arun`` runs it in a worker thread), whose ``ToolFailure``
  results report a failure (a spent usage limit or invalid input as a caller error). CrewAI validates
  the arguments against an ``args_schema`` with fields; without fields it passes them on unchecked, so
  names that its ``_run`` (an ``@tool``'s function) does not take are checked here.
- an MCP tool or a definition has no callable here: call it through your client inside
  ``toolbox.retriever.track(tool_id, query)``.

The arguments may be the JSON text a model wrote (``call.function.arguments``; empty text is none): text
that is not a JSON object is a caller error, reported before anything runs.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping, ValuesView
from functools import partial
from typing import Any

from pydantic import ValidationError

from rated.catalog.objects import ToolObject, is_single_input_langchain_tool
from rated.catalog.signature import argument_parser
from rated.classify import outcome_from_exception
from rated.errors import ConfigError
from rated.outcome import Outcome, OutcomeKind
from rated.shown import shown
from rated.tracking import AsyncTrackedCall, TrackedCall
from rated.validation_text import one_line

__all__ = ["Parsers", "arun", "check_callable", "in_worker_thread", "run"]

#: each function tool's typed-argument parser by tool id, with the object it was made for (an id added
#: again may be another object): kept by the caller across calls, filled on a tool's first call
Parsers = dict[str, tuple[Any, Callable[[Mapping[str, Any]], dict[str, Any]]]]

_NOT_CALLABLE = ("mcp", "definition")
# CrewAI's ToolFailure reasons that are no fault of the tool (crewai.tools.tool_failure.ToolFailureReason)
_CREWAI_NOT_THE_TOOL = frozenset({"usage_limit", "unknown_tool", "invalid_input", "repeated_call"})


def check_callable(entry: ToolObject, *, awaited: bool) -> None:
    """Raise a ``ConfigError`` when ``entry``'s object cannot be called here (by ``run`` or, ``awaited``,
    ``arun``), saying how to call it instead."""
    name, obj, kind = entry.tool.id, entry.obj, entry.kind
    if kind in _NOT_CALLABLE:
        what, how = (
            ("an MCP tool", "your client (an MCP session's call_tool)")
            if kind == "mcp"
            else ("a tool definition", "the client or code that runs it")
        )
        raise ConfigError(
            f"tool {name!r} is {what}, not a callable: call it through {how} "
            f"inside toolbox.retriever.track({name!r}, query)"
        )
    if not awaited and kind == "python" and _is_async(obj):
        raise ConfigError(f"tool {name!r} is a coroutine function: use Toolbox.arun")
    if not awaited and kind == "langchain" and _get(obj, "func", ...) is None and _get(obj, "coroutine"):
        raise ConfigError(f"tool {name!r} is a LangChain tool with only a coroutine: use arun")
    if kind == "langchain" and _takes_tool_call_id(obj):
        raise ConfigError(
            f"tool {name!r} takes the model's tool call id (InjectedToolCallId), which only a whole tool "
            f"call carries: invoke it with the tool call inside toolbox.retriever.track({name!r}, query)"
        )
    if kind == "llamaindex" and _get(obj, "requires_context") is True:
        raise ConfigError(
            f"tool {name!r} is a LlamaIndex tool that takes a workflow Context: call it with the "
            f"context inside toolbox.retriever.track({name!r}, query)"
        )


def run(call: TrackedCall, entry: ToolObject, arguments: object, parsers: Parsers) -> Any:
    """Call ``entry``'s object with ``arguments`` (a mapping, or the JSON text of one) the way its
    framework does, inside ``call``: arguments that do not fit are reported and raised before it runs,
    and a result that says the call failed is reported as such. Returns what the tool returned."""
    obj, kind = entry.obj, entry.kind
    kwargs = _checked(call, entry, _arguments(call, entry.tool.id, arguments), parsers)
    if kind == "python":
        return call.run(obj, kwargs)
    if kind == "langchain":
        handled: list[Outcome] = []
        return _handled(call, handled, _langchain_tool(obj, handled).invoke(kwargs))
    if kind == "llamaindex":
        return _reported(call, obj.call(**kwargs))
    return _reported(call, obj.run(**kwargs))  # crewai


def in_worker_thread(entry: ToolObject) -> bool:
    """Whether ``Toolbox.arun`` awaits ``entry``'s object by running ``Toolbox.run`` in a worker thread
    (plain functions and CrewAI tools) rather than by ``arun`` here."""
    kind = entry.kind
    if kind in ("langchain", "llamaindex") or (kind == "python" and _is_async(entry.obj)):
        return False
    return not _wraps_async(entry)


async def arun(call: AsyncTrackedCall, entry: ToolObject, arguments: object, parsers: Parsers) -> Any:
    """``run`` for asyncio, for an object that ``in_worker_thread`` does not run: coroutine functions
    are awaited, LangChain tools ``ainvoke``d, LlamaIndex tools ``acall``ed."""
    obj, kind = entry.obj, entry.kind
    kwargs = _checked(call, entry, _arguments(call, entry.tool.id, arguments), parsers)
    if _wraps_async(entry):  # a plain wrapper of a coroutine function: it may return it, or run it to its end
        return await call.run(_in_thread(obj), kwargs)
    if kind == "python":
        return await call.run(obj, kwargs)
    if kind == "langchain":
        handled: list[Outcome] = []
        return _handled(call, handled, await _langchain_tool(obj, handled).ainvoke(kwargs))
    return _reported(call, await obj.acall(**kwargs))


def _wraps_async(entry: ToolObject) -> bool:
    """A plain function that wraps a coroutine function (``functools.wraps``)."""
    obj = entry.obj
    return entry.kind == "python" and not _is_async(obj) and _is_async(inspect.unwrap(obj))


def _checked(
    call: TrackedCall | AsyncTrackedCall, entry: ToolObject, arguments: dict[str, Any], parsers: Parsers
) -> dict[str, Any]:
    """The arguments to pass, checked where the framework does not check them itself (a caller error,
    reported and raised before the tool runs); a function's converted to its parameters' types."""
    obj, tool_id = entry.obj, entry.tool.id
    if entry.kind == "python":
        made_for, parse = parsers.get(tool_id, (None, None))
        if parse is None or made_for is not obj:
            parse = argument_parser(obj)
            parsers[tool_id] = (obj, parse)
        try:
            return parse(arguments)
        except ValidationError as exc:
            call.report(OutcomeKind.CALLER_ERROR)
            problems = one_line(exc)  # one line, as a model reads it back: field and reason, no links
            message = f"arguments for tool {tool_id!r} do not fit its parameters: {problems}"
            raise ValueError(message) from exc
    if entry.kind == "langchain":
        if is_single_input_langchain_tool(obj):  # LangChain raises a ToolException: the tool's error
            if len(arguments) != 1:
                call.report(OutcomeKind.CALLER_ERROR)
                raise TypeError(
                    f"arguments for tool {tool_id!r} do not fit it: it takes one string, got "
                    f"{len(arguments)} argument(s)"
                )
        elif not _is_model(_get(obj, "args_schema")):  # no model: LangChain passes them on unchecked
            target = _get(obj, "func") or _get(obj, "coroutine") or _get(obj, "_run")
            _check_names(call, tool_id, target, arguments, entry.tool.parameters.get("required"))
    elif entry.kind == "llamaindex":
        _check_llamaindex(obj, arguments)
        partial_params = _get(obj, "partial_params")
        given = {**partial_params, **arguments} if isinstance(partial_params, Mapping) else arguments
        _check_names(call, tool_id, _get(obj, "real_fn") or _get(obj, "fn"), given, None)
    elif entry.kind == "crewai" and _no_fields(_get(obj, "args_schema")):
        # CrewAI validates with args_schema only when it has fields, and passes the arguments on
        # unchecked otherwise: names the tool does not take fail inside it, as if it had failed
        target = _get(obj, "func") if callable(_get(obj, "func")) else _get(obj, "_run")  # @tool's
        _check_names(call, tool_id, target, arguments, None)
    return arguments


def _arguments(call: TrackedCall | AsyncTrackedCall, tool_id: str, arguments: object) -> dict[str, Any]:
    """The arguments as a dict; JSON text is parsed. What is not an object is the caller's error: it is
    reported (``caller_error``) and raised, and the tool does not run."""
    if arguments is None:
        return {}
    if isinstance(arguments, (str, bytes)) and not arguments.strip():
        return {}  # what some APIs send for a function without parameters
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:
            call.report(OutcomeKind.CALLER_ERROR)
            raise ValueError(f"arguments for tool {tool_id!r} are not valid JSON: {exc}") from None
    if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
        call.report(OutcomeKind.CALLER_ERROR)
        raise TypeError(
            f"arguments for tool {tool_id!r} must be an object of named arguments, got {shown(arguments)}"
        )
    return dict(arguments)


def _check_names(
    call: TrackedCall | AsyncTrackedCall, tool_id: str, fn: Any, arguments: Mapping[str, Any], required: Any
) -> None:
    """Raise (and report a caller error) when a name in ``required`` is missing from ``arguments``, or one
    of them is no parameter of ``fn`` (unless it takes ``**kwargs``)."""
    missing = [n for n in required if n not in arguments] if isinstance(required, list) else []
    unexpected: list[str] = []
    params: ValuesView[inspect.Parameter] | None
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # no signature (or no function): the call will tell
        params = None
    if params is not None and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        unexpected = [n for n in arguments if n not in named]
    if missing or unexpected:
        call.report(OutcomeKind.CALLER_ERROR)
        parts = [
            f"{what} {', '.join(map(repr, names))}"
            for what, names in (("missing", missing), ("unexpected", unexpected))
            if names
        ]
        raise TypeError(f"arguments for tool {tool_id!r} do not fit it: {'; '.join(parts)}")


def _check_llamaindex(obj: Any, arguments: Mapping[str, Any]) -> None:
    """Validate against the tool's ``fn_schema`` (a pydantic ``ValidationError`` is a caller error): a
    LlamaIndex ``FunctionTool`` passes arguments on unchecked, so a missing one fails inside it."""
    schema = _get(_get(obj, "metadata"), "fn_schema")
    validate = _get(schema, "model_validate")
    if callable(validate):
        validate(dict(arguments))


def _reported(call: TrackedCall | AsyncTrackedCall, result: Any) -> Any:
    """A result that says the call failed reports that: a LlamaIndex ``ToolOutput`` with ``is_error`` (the
    outcome of its exception), a CrewAI ``ToolFailure`` (``tool_error``, or ``caller_error`` for a
    reason that is no fault of the tool: spent usage limit, invalid input, ...)."""
    if _get(result, "is_error") is True:
        exc = _get(result, "exception")
        outcome = outcome_from_exception(exc) if isinstance(exc, BaseException) else None
        call.report(outcome or OutcomeKind.TOOL_ERROR)
    elif type(result).__name__ == "ToolFailure" and _get(result, "reason") is not None:
        reason = str(_get(result.reason, "value") or result.reason)
        call.report(OutcomeKind.CALLER_ERROR if reason in _CREWAI_NOT_THE_TOOL else OutcomeKind.TOOL_ERROR)
    return result


def _langchain_tool(obj: Any, handled: list[Outcome]) -> Any:
    """The LangChain tool to invoke: ``obj``, or, when it answers errors as text (``handle_tool_error``,
    ``handle_validation_error``), a copy of it for this call whose handlers answer the same text and note
    the outcome in ``handled``: LangChain returns that text as it returns a result, so that the call
    would otherwise be reported a success."""
    flags = {name: _get(obj, name) for name in ("handle_tool_error", "handle_validation_error")}
    copy = _get(obj, "model_copy")
    if not any(flags.values()) or not callable(copy):
        return obj
    return copy(update={name: partial(_answer, name, flag, handled) for name, flag in flags.items() if flag})


def _answer(name: str, flag: Any, handled: list[Outcome], exc: Exception) -> Any:
    """What LangChain answers for ``exc`` with ``flag`` as the tool's ``name`` setting (its
    ``_handle_tool_error`` / ``_handle_validation_error``), noting the call's outcome in ``handled``."""
    if name == "handle_tool_error":  # a ToolException: the tool's own failure, or its cause's
        handled.append(outcome_from_exception(exc) or Outcome(OutcomeKind.TOOL_ERROR))
        text = exc.args[0] if exc.args else "Tool execution error"
    else:  # the arguments failed the tool's args_schema
        handled.append(Outcome(OutcomeKind.CALLER_ERROR))
        text = "Tool input validation error"
    if isinstance(flag, bool):
        return text
    return flag if isinstance(flag, str) else flag(exc)


def _handled(call: TrackedCall | AsyncTrackedCall, handled: list[Outcome], result: Any) -> Any:
    if handled:
        call.report(handled[-1])
    return result


def _takes_tool_call_id(obj: Any) -> bool:
    """A LangChain tool with an ``InjectedToolCallId`` argument: invoked without a tool call, it raises."""
    schema = _get(obj, "args_schema")
    fields = _get(schema, "model_fields") if isinstance(schema, type) else None
    for info in (fields or {}).values() if isinstance(fields, Mapping) else ():
        for mark in _get(info, "metadata") or ():
            cls = mark if isinstance(mark, type) else type(mark)
            if any(c.__name__ == "InjectedToolCallId" for c in cls.__mro__):
                return True
    injected = _get(obj, "_injected_args_keys")
    return isinstance(injected, frozenset | set) and "tool_call_id" in injected


def _no_fields(schema: Any) -> bool:
    """No argument model, or a pydantic model without fields (``model_fields``, v1's ``__fields__``)."""
    if schema is None:
        return True
    fields = _get(schema, "model_fields") if isinstance(schema, type) else None
    if fields is None and isinstance(schema, type):
        fields = _get(schema, "__fields__")
    return isinstance(fields, Mapping) and not fields


def _is_model(schema: Any) -> bool:
    """A pydantic model class (v2 or v1), which LangChain validates the arguments with."""
    return isinstance(schema, type) and (
        callable(_get(schema, "model_validate")) or hasattr(schema, "parse_obj")
    )


def _in_thread(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a plain function wrapping a coroutine function) called in a worker thread, and what it
    returns awaited when it is the coroutine (a decorator that returns it), here on the event loop; one
    that runs the coroutine itself (``asyncio.run``) can, with no event loop in that thread."""

    async def call(**arguments: Any) -> Any:
        result = await asyncio.to_thread(partial(fn, **arguments))
        return await result if inspect.isawaitable(result) else result

    call.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    return call


def _is_async(fn: Any) -> bool:
    """A coroutine function, or a callable object whose ``__call__`` is one."""
    try:
        return inspect.iscoroutinefunction(fn) or (
            not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)
        )
    except Exception:
        return False


def _get(obj: Any, name: str, default: Any = None) -> Any:
    try:
        return getattr(obj, name, default)
    except Exception:
        return default
