"""A Python callable as a tool: its parameters' JSON schema (written by pydantic from the signature), its
docstring's prose, and the parameter descriptions of the docstring's Args section.

The schema is what a model sees, so it holds only what a call by name can pass: ``*args`` and
positional-only parameters with a default are left out (a positional-only one without a default makes
the function uncallable with named arguments, an error), ``**kwargs`` allows other names
(``additionalProperties: true``), a parameter without annotation takes any value. Pydantic writes each
annotation (``Optional``, ``list[int]``, ``Literal``, ``Annotated[..., Field(description=...)]``, models)
as it would for a model field; field titles are left out (the property names say it), and so are
defaults JSON cannot hold (a sentinel ``object()``, an infinite or NaN float). A ``typing.TypedDict``,
which pydantic refuses before Python 3.12, is read as the same ``typing_extensions.TypedDict`` (also
within ``list[...]``, unions, ``Annotated`` and other TypedDicts of either module, its fields required as
their ``Required`` / ``NotRequired`` marks say, also inside ``Annotated`` or ``ReadOnly``; not a recursive
or generic one, nor one inside a dataclass or model, whose error names the parameter). A parameter
without a description gets its docstring's, from a Google (``Args:``), NumPy (``Parameters`` over dashes)
or reST (``:param name:``) section.

>>> def search(query: str, limit: int = 5) -> list[str]:
...     '''Search the web.
...
...     Args:
...         query: what to look for
...     '''
>>> signature_schema(search, param_docs(search.__doc__))["properties"]
{'query': {'type': 'string', 'description': 'what to look for'}, 'limit': {'default': 5, 'type': 'integer'}}
>>> docstring_prose(search.__doc__)
'Search the web.'
"""

from __future__ import annotations

import inspect
import math
import re
import sys
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from typing import Annotated, Any, cast

import typing_extensions
from pydantic import ConfigDict, Field, create_model
from pydantic.errors import PydanticUserError
from pydantic.json_schema import GenerateJsonSchema, PydanticJsonSchemaWarning

from rated.catalog.collect.normalise import clean_docstring, clean_text

__all__ = [
    "SignatureError",
    "argument_parser",
    "docstring_prose",
    "model_schema",
    "param_docs",
    "signature_schema",
]

_P = inspect.Parameter
# reST fields, which clean_docstring does not treat as a section: the prose ends where they begin
_REST_FIELD = re.compile(r"^\s*:(param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?)\b")
_REST_PARAM = re.compile(
    r"^\s*:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?(\*{0,2}\w+)\s*:(.*)$"
)
_HEADER = re.compile(
    r"^(\s*)(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters)\s*(:?)\s*$",
    re.I,
)
_DASHES = re.compile(r"^\s*-{3,}\s*$")
_GOOGLE_ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:(.*)$")
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(?::.*)?$")
_TYPING_TYPEDDICT_REFUSED = sys.version_info < (3, 12)  # by pydantic: typing_extensions' it takes
_REQUIRED_MARKS = {
    typing.Required,
    typing.NotRequired,
    typing_extensions.Required,
    typing_extensions.NotRequired,
}
_READ_ONLY_MARKS = {typing_extensions.ReadOnly, getattr(typing, "ReadOnly", typing_extensions.ReadOnly)}


class SignatureError(ValueError):
    """The callable cannot be described as a tool (the message says why; the caller adds where)."""


class _NoTitles(GenerateJsonSchema):
    """Pydantic's JSON schema without a title for each field: the property name says it."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def signature_schema(fn: Callable[..., Any], descriptions: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The JSON schema of the named arguments ``fn`` takes (see the module doc); ``descriptions`` (by
    parameter name) fill in where an annotation gives none. ``SignatureError`` when it cannot be written."""
    try:
        sig = inspect.signature(fn, eval_str=True)
    except (NameError, SyntaxError) as exc:
        raise SignatureError(_unresolved(fn, exc)) from None
    except (TypeError, ValueError):
        raise SignatureError("it has no signature Python can read") from None
    fields: dict[str, Any] = {}
    no_json_default: list[str] = []  # infinite or NaN defaults: no JSON (pydantic writes some as null)
    takes_more = False
    typed = _annotations(sig)
    for i, p in enumerate(sig.parameters.values()):
        if p.kind is _P.VAR_KEYWORD:
            takes_more = True
        elif p.kind is _P.POSITIONAL_ONLY and p.default is _P.empty:
            raise SignatureError(
                f"parameter {p.name!r} is positional-only: a tool is called with named arguments"
            )
        elif p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY):
            annotation = Any if p.annotation is _P.empty else typed[p.name]
            default = ... if p.default is _P.empty else p.default
            if not _finite(p.default):
                no_json_default.append(p.name)
            # aliased: a parameter may be called `json`, `copy` or `_x`, which a model's fields may not
            fields[f"p{i}"] = (Annotated[annotation, Field(alias=p.name)], default)
    config = ConfigDict(extra="allow" if takes_more else "ignore", arbitrary_types_allowed=True)
    try:
        model = create_model("arguments", __config__=config, **fields)
        schema = _json_schema(model)
    except PydanticUserError as exc:  # an annotation pydantic cannot write as JSON: name the parameter
        raise SignatureError(_culprit(sig, typed, config) or _first_line(exc)) from None
    if not takes_more:
        schema.pop("additionalProperties", None)  # as pydantic writes a model that ignores other keys
    for name in no_json_default:
        schema["properties"][name].pop("default", None)
    _describe(schema, descriptions or {})
    return schema


def argument_parser(fn: Callable[..., Any]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """What a call of ``fn`` by name should pass for the arguments given as its JSON schema describes them
    (as a model writes them): each argument whose parameter has an annotation validated and converted as
    pydantic does for a model field (ISO text to a ``datetime``, a value to its enum member, an object to
    the model, dataclass or TypedDict it names), the others kept as given. Names that are no parameter and
    missing arguments are left to the call's binding to refuse. The parser returns a new dict, and raises
    pydantic's ``ValidationError`` for a value that does not fit its annotation.

    >>> import datetime
    >>> def remind(at: datetime.date, text: str = "") -> None: ...
    >>> argument_parser(remind)({"at": "2026-12-01"})
    {'at': datetime.date(2026, 12, 1)}
    """
    sig = inspect.signature(fn, eval_str=True)
    fields: dict[str, Any] = {}
    names: dict[str, str] = {}  # field -> parameter name
    typed = _annotations(sig)
    for i, p in enumerate(sig.parameters.values()):
        if p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY) and p.annotation not in (_P.empty, Any):
            fields[f"p{i}"] = (Annotated[typed[p.name], Field(alias=p.name)], None)  # None: not given
            names[f"p{i}"] = p.name
    if not fields:
        return dict
    config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)
    name = getattr(fn, "__name__", None) or type(fn).__name__
    model = create_model(name if isinstance(name, str) else "arguments", __config__=config, **fields)
    wanted = frozenset(names.values())

    def parse(arguments: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(arguments)
        given = {k: v for k, v in arguments.items() if k in wanted}
        if given:
            parsed = model.model_validate(given)
            for field in parsed.model_fields_set:
                out[names[field]] = getattr(parsed, field)
        return out

    return parse


def model_schema(model: Any) -> dict[str, Any]:
    """The JSON schema of a framework's argument model (a pydantic v2 model, a v1 one, or a schema dict),
    without the root's title and description (the tool's own name and description carry those)."""
    if isinstance(model, Mapping):
        schema = dict(model)
    elif callable(getattr(model, "model_json_schema", None)):
        try:
            schema = _json_schema(model)
        except TypeError:  # a model_json_schema of its own, without pydantic's arguments
            schema = dict(model.model_json_schema())
    elif isinstance(model, type) and callable(getattr(model, "schema", None)):  # pydantic v1
        schema = dict(cast(Any, model).schema())  # narrowed to `type`, which has no v1 `schema`
    else:
        raise SignatureError(f"its argument schema is a {type(model).__name__}, not a model or a dict")
    schema.pop("title", None)
    schema.pop("description", None)
    return schema


def docstring_prose(doc: str | None) -> str:
    """The docstring's text before its sections (Args, Returns, reST fields), on one line."""
    if not doc:
        return ""
    lines = inspect.cleandoc(doc).splitlines()
    cut = next((i for i, line in enumerate(lines) if _REST_FIELD.match(line)), len(lines))
    return clean_docstring("\n".join(lines[:cut]))


def param_docs(doc: str | None) -> dict[str, str]:
    """Parameter name -> description from a Google, NumPy or reST docstring (the first one wins)."""
    if not doc:
        return {}
    lines = inspect.cleandoc(doc).splitlines()
    found: dict[str, list[str]] = {}
    i = 0
    while i < len(lines):
        rest = _REST_PARAM.match(lines[i])
        header = _HEADER.match(lines[i])
        if rest:
            i = _entry(lines, i, _indent(lines[i]), rest.group(1), rest.group(2), found)
        elif header and i + 1 < len(lines) and _DASHES.match(lines[i + 1]):  # NumPy: entries at its indent
            i = _section(lines, i + 2, _indent(lines[i]), _NUMPY_ENTRY, found, same_indent=True)
        elif header and header.group(3):  # Google: "Args:", entries indented below it
            i = _section(lines, i + 1, _indent(lines[i]), _GOOGLE_ENTRY, found, same_indent=False)
        else:
            i += 1
    return {name.lstrip("*"): text for name, parts in found.items() if (text := clean_text(" ".join(parts)))}


# ---------------------------------------------------------------------------------------------- helpers
def _json_schema(model: Any) -> dict[str, Any]:
    with warnings.catch_warnings():  # a default JSON cannot hold is left out of the schema: say nothing
        warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
        schema = dict(model.model_json_schema(schema_generator=_NoTitles))
    schema.pop("title", None)
    _drop_defaults_json_cannot_hold(schema)
    return schema


def _drop_defaults_json_cannot_hold(node: Any) -> None:
    """Remove the ``default`` of each (sub)schema holding an infinite or NaN float: pydantic writes them as
    they are, which is no JSON (``Infinity``), and a store writes them as ``null``, which the type refuses."""
    if isinstance(node, dict):
        if "default" in node and not _finite(node["default"]):
            del node["default"]
        for value in node.values():
            _drop_defaults_json_cannot_hold(value)
    elif isinstance(node, list):
        for value in node:
            _drop_defaults_json_cannot_hold(value)


def _finite(value: Any) -> bool:
    """No infinite or NaN float in ``value`` (looked for in lists, tuples, sets and dicts)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return all(_finite(v) for v in value)
    return True


def _culprit(sig: inspect.Signature, typed: Mapping[str, Any], config: ConfigDict) -> str | None:
    """Which parameter's annotation has no JSON schema (each in a model of its own, made as the whole one)."""
    for i, p in enumerate(sig.parameters.values()):
        if p.annotation is _P.empty or p.kind in (_P.VAR_KEYWORD, _P.VAR_POSITIONAL):
            continue
        try:
            field: dict[str, Any] = {f"p{i}": (typed[p.name], ...)}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
                one = create_model("arguments", __config__=config, **field)
                one.model_json_schema()
        except Exception as exc:
            return f"parameter {p.name!r}: its type cannot be written as JSON schema ({_first_line(exc)})"
    return None


def _annotations(sig: inspect.Signature) -> dict[str, Any]:
    """Each parameter's annotation as pydantic takes it: a ``typing.TypedDict`` in it as the same
    ``typing_extensions.TypedDict`` before Python 3.12 (one copy of each, shared by the parameters)."""
    if not _TYPING_TYPEDDICT_REFUSED:
        return {name: p.annotation for name, p in sig.parameters.items()}
    copies: dict[type, type | None] = {}
    return {name: _typeddicts_copied(p.annotation, copies) for name, p in sig.parameters.items()}


def _typeddicts_copied(annotation: Any, copies: dict[type, type | None]) -> Any:
    """``annotation`` with each ``typing.TypedDict`` in it replaced by its ``typing_extensions`` copy; as it
    is when it holds none (or only recursive or generic ones, left for pydantic to refuse)."""
    if isinstance(annotation, type) and typing_extensions.is_typeddict(annotation):  # either module's
        return _typeddict_copy(annotation, copies)  # typing_extensions' as it is, unless it holds typing's
    origin = typing.get_origin(annotation)
    if origin is None or origin is typing.Literal:
        return annotation
    if origin is Annotated:
        inner = _typeddicts_copied(annotation.__origin__, copies)
        if inner is annotation.__origin__:
            return annotation
        return Annotated[(inner, *annotation.__metadata__)]
    args = typing.get_args(annotation)
    new = tuple(_typeddicts_copied(a, copies) for a in args)
    if all(n is a for n, a in zip(new, args, strict=True)):
        return annotation
    if origin is typing.Union or isinstance(annotation, types.UnionType):
        return typing.Union[new]  # noqa: UP007 - built from a tuple of types
    if isinstance(annotation, types.GenericAlias):
        return types.GenericAlias(origin, new)
    copy_with = getattr(annotation, "copy_with", None)
    return copy_with(new) if callable(copy_with) else annotation


def _typeddict_copy(td: type, copies: dict[type, type | None]) -> type:
    """The ``typing_extensions.TypedDict`` of ``td``: its fields (each required or not as in ``td``), name,
    module and docstring, which pydantic writes in its JSON schema. A ``typing_extensions`` one is ``td``
    itself unless a field holds a ``typing.TypedDict`` (then its copy also keeps ``closed`` and
    ``extra_items``)."""
    if td in copies:
        return copies[td] or td  # None: being copied, a TypedDict that holds itself (left as it is)
    if getattr(td, "__parameters__", ()):
        return td  # generic: its parameters are no field types
    copies[td] = None
    try:
        hints = typing.get_type_hints(td, include_extras=True)
    except Exception:  # a forward reference its module does not define: pydantic names it
        del copies[td]
        return td
    ours = type(td).__module__ == "typing"  # else typing_extensions', which pydantic takes
    fields: dict[str, Any] = {}
    changed = ours
    for name, hint in hints.items():
        required = _required(hint, name in td.__required_keys__)  # type: ignore[attr-defined]  # a TypedDict's
        while typing.get_origin(hint) in _REQUIRED_MARKS:
            hint = typing.get_args(hint)[0]
        copied = _typeddicts_copied(hint, copies)
        changed = changed or copied is not hint
        mark = typing_extensions.Required if required else typing_extensions.NotRequired
        fields[name] = mark[copied]
    if not changed:
        copies[td] = td
        return td
    options = {} if ours else {"closed": getattr(td, "__closed__", None)}
    if not ours and hasattr(td, "__extra_items__"):
        options["extra_items"] = td.__extra_items__
    # the functional form, its fields known only at run time (mypy takes only literal ones)
    copy = typing_extensions.TypedDict(td.__name__, fields, **options)  # type: ignore[misc]
    copy.__module__, copy.__qualname__, copy.__doc__ = td.__module__, td.__qualname__, td.__doc__
    if hasattr(td, "__pydantic_config__"):
        copy.__pydantic_config__ = td.__pydantic_config__  # type: ignore[attr-defined]
    copies[td] = copy
    return copy


def _required(hint: Any, default: bool) -> bool:
    """Whether a TypedDict field is required: as its ``Required`` / ``NotRequired`` mark says, looked for
    through ``Annotated`` and ``ReadOnly`` as pydantic looks for it, else ``default`` (``__required_keys__``,
    which Python 3.11 computes without the mark of a string annotation)."""
    while True:
        origin = typing.get_origin(hint)
        if origin in _REQUIRED_MARKS:
            return origin in (typing.Required, typing_extensions.Required)
        if origin is Annotated:
            hint = hint.__origin__
        elif origin in _READ_ONLY_MARKS:
            hint = typing.get_args(hint)[0]
        else:
            return default


def _unresolved(fn: Callable[..., Any], exc: Exception) -> str:
    """Which parameter's annotation (a string: ``from __future__ import annotations``) names what the
    function's module does not define (a class local to a function, an import under TYPE_CHECKING)."""
    missing = getattr(exc, "name", None)
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        params = []  # type: ignore[assignment]
    for p in params:
        if (
            isinstance(p.annotation, str)
            and missing
            and re.search(rf"\b{re.escape(missing)}\b", p.annotation)
        ):
            return f"parameter {p.name!r}: its annotation {p.annotation!r} cannot be resolved ({exc})"
    return f"an annotation cannot be resolved ({exc})"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _describe(schema: dict[str, Any], descriptions: Mapping[str, str]) -> None:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for name, text in descriptions.items():
        prop = properties.get(name)
        if isinstance(prop, dict) and "description" not in prop:
            prop["description"] = text


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _section(
    lines: list[str],
    start: int,
    header_indent: int,
    entry: re.Pattern[str],
    found: dict[str, list[str]],
    *,
    same_indent: bool,
) -> int:
    """Read the entries of a section starting at ``start``; returns the line after it."""
    i, entry_indent = start, None
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        if indent < header_indent or (not same_indent and indent == header_indent):
            return i  # the next section, or text after this one
        if same_indent and indent == header_indent and i + 1 < len(lines) and _DASHES.match(lines[i + 1]):
            return i  # the next NumPy section
        entry_indent = indent if entry_indent is None else entry_indent
        match = entry.match(line.strip()) if indent == entry_indent else None
        if match is None:
            return i
        rest = match.group(2) if entry is _GOOGLE_ENTRY else ""
        i = _entry(lines, i, entry_indent, match.group(1), rest, found)
    return i


def _entry(lines: list[str], i: int, indent: int, name: str, text: str, found: dict[str, list[str]]) -> int:
    """One parameter's description: ``text`` and the lines indented deeper than ``indent`` below it."""
    parts = [text.strip()] if text.strip() else []
    i += 1
    while i < len(lines) and lines[i].strip() and _indent(lines[i]) > indent:
        parts.append(lines[i].strip())
        i += 1
    found.setdefault(name, parts)
    return i
