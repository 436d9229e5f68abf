"""Small stand-ins for LlamaIndex and CrewAI tools, too heavy to install for the tests (llama-index-core
pulls nltk, sqlalchemy, tiktoken, aiohttp ...; crewai chromadb, lancedb, openai and pins pydantic<2.13).

Each copies the attribute names, call signatures and behaviour rated relies on from the real source, read
from the wheels (``pip download --no-deps llama-index-core crewai``):

- llama-index-core 0.14.25, ``llama_index/core/tools/types.py``: ``ToolMetadata`` (a dataclass:
  ``description``, ``name``, ``fn_schema`` defaulting to ``DefaultToolFnSchema``, ``get_parameters_dict``
  keeping only type/properties/required/definitions/$defs, the ``input`` schema when ``fn_schema`` is None),
  ``ToolOutput`` (``is_error``, ``exception``); ``function_tool.py``: ``FunctionTool`` (``metadata``,
  ``fn`` and ``real_fn`` properties, ``partial_params`` (left out of ``fn_schema``, passed first),
  ``requires_context`` / ``ctx_param_name`` (a ``Context`` parameter, left out of ``fn_schema``; ``call``
  raises ``ValueError`` without it), ``call(*args, **kwargs)`` calling the function unchecked, ``acall``).
- crewai 1.15.30, ``crewai/tools/base_tool.py``: ``BaseTool`` (a pydantic model: ``name``,
  ``description``, ``args_schema``, made from ``_run``'s named parameters when not given (``*args`` and
  ``**kwargs`` left out); ``run(*args, **kwargs)`` validates keyword arguments with ``args_schema`` when it
  has fields, raising ``ValueError(...) from`` the ``ValidationError``, and passes them on unchecked
  when it has none, then calls ``_run``; ``arun`` likewise with ``_arun``), ``Tool`` (``func``, which its
  ``run`` calls) and the ``tool`` decorator making one (``args_schema`` from the function's named
  parameters); ``tool_failure.py``: ``ToolFailure`` (``message``, ``reason``, a ``ToolFailureReason`` str
  enum).

Imported by the toolbox and catalog-object tests by this unique module name (``tests/`` is on the path:
its conftest lives there).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

# ---------------------------------------------------------------------------------------- LlamaIndex


class DefaultToolFnSchema(BaseModel):
    """Default tool function Schema."""

    input: str


@dataclass
class ToolMetadata:
    description: str
    name: str | None = None
    fn_schema: type[BaseModel] | None = DefaultToolFnSchema
    return_direct: bool = False

    def get_parameters_dict(self) -> dict:
        if self.fn_schema is None:
            return {
                "type": "object",
                "properties": {"input": {"title": "input query string", "type": "string"}},
                "required": ["input"],
            }
        parameters = self.fn_schema.model_json_schema()
        return {
            k: v
            for k, v in parameters.items()
            if k in ["type", "properties", "required", "definitions", "$defs"]
        }


class ToolOutput(BaseModel):
    content: str
    tool_name: str
    raw_input: dict[str, Any]
    raw_output: Any
    is_error: bool = False
    _exception: Exception | None = None

    def __init__(self, exception: Exception | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._exception = exception

    @property
    def exception(self) -> Exception | None:
        return self._exception


class Context:
    """A workflow ``Context`` (``llama_index.core.workflow``): a tool taking one needs it passed in."""


class FunctionTool:
    """``FunctionTool(fn, metadata)``; ``call`` passes the arguments to ``fn`` unchecked, as the real one,
    with its ``partial_params`` first; a function taking a ``Context`` requires one."""

    def __init__(
        self,
        fn: Any,
        metadata: ToolMetadata,
        async_fn: Any = None,
        partial_params: dict[str, Any] | None = None,
    ) -> None:
        import inspect

        self._fn = fn
        self._real_fn = fn
        self._async_fn = async_fn
        self._metadata = metadata
        self.partial_params = partial_params or {}
        params = inspect.signature(fn, eval_str=True).parameters.values()
        self.requires_context = any(p.annotation is Context for p in params)
        self.ctx_param_name = next((p.name for p in params if p.annotation is Context), None)

    @classmethod
    def from_defaults(
        cls,
        fn: Any,
        name: str | None = None,
        description: str | None = None,
        partial_params: dict[str, Any] | None = None,
    ) -> FunctionTool:
        import inspect

        name = name or fn.__name__
        sig = inspect.signature(fn, eval_str=True)
        left_out = {*(partial_params or {})}
        fields = {
            p.name: (p.annotation, ... if p.default is p.empty else p.default)
            for p in sig.parameters.values()
            if p.name not in left_out and p.annotation is not Context
        }
        if description is None:  # as the real from_defaults writes it
            description = f"{name}{sig}\n{fn.__doc__ or ''}".strip()
        return cls(
            fn,
            ToolMetadata(description=description, name=name, fn_schema=create_model(name, **fields)),
            partial_params=partial_params,
        )

    @property
    def metadata(self) -> ToolMetadata:
        return self._metadata

    @property
    def fn(self) -> Any:
        return self._fn

    @property
    def real_fn(self) -> Any:
        return self._real_fn

    def __call__(self, *args: Any, **kwargs: Any) -> ToolOutput:
        return self.call(*args, **kwargs)

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        kwargs = {**self.partial_params, **kwargs}
        if self.requires_context and self.ctx_param_name not in kwargs:
            raise ValueError("Context is required for this tool")
        raw_output = self._fn(*args, **kwargs)
        if isinstance(raw_output, ToolOutput):
            return raw_output
        return ToolOutput(
            content=str(raw_output),
            tool_name=self.metadata.name or "",
            raw_input={"args": args, "kwargs": kwargs},
            raw_output=raw_output,
        )

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        kwargs = {**self.partial_params, **kwargs}
        if self.requires_context and self.ctx_param_name not in kwargs:
            raise ValueError("Context is required for this tool")
        if self._async_fn is not None:
            raw_output = await self._async_fn(*args, **kwargs)
        else:  # sync_to_async: the real one runs fn in an executor
            raw_output = await asyncio.get_running_loop().run_in_executor(
                None, lambda: self._fn(*args, **kwargs)
            )
        return ToolOutput(
            content=str(raw_output),
            tool_name=self.metadata.name or "",
            raw_input={"args": args, "kwargs": kwargs},
            raw_output=raw_output,
        )


def error_output(name: str, exc: Exception) -> ToolOutput:
    """What LlamaIndex's ``call_tool`` returns for a tool that raised (``llama_index/core/tools/calling.py``):
    the error as an output, ``is_error`` set."""
    return ToolOutput(
        content="Encountered error: " + str(exc),
        tool_name=name,
        raw_input={},
        raw_output=str(exc),
        is_error=True,
        exception=exc,
    )


# -------------------------------------------------------------------------------------------- CrewAI


class ToolFailureReason(str, Enum):  # noqa: UP042 - as crewai declares it
    TOOL_REPORTED = "tool_reported"
    EXCEPTION = "exception"
    MCP_ERROR = "mcp_error"
    USAGE_LIMIT = "usage_limit"
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_INPUT = "invalid_input"
    REPEATED_CALL = "repeated_call"


class ToolFailure(BaseModel):
    model_config = ConfigDict(frozen=True)

    message: str
    reason: ToolFailureReason = ToolFailureReason.TOOL_REPORTED
    code: str | None = None
    retryable: bool = False


class _ArgsSchemaPlaceholder(BaseModel):
    pass


class CrewBaseTool(BaseModel):
    """crewai.tools.BaseTool: subclasses set ``name``, ``description``, ``args_schema`` and ``_run``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(description="The unique name of the tool that clearly communicates its purpose.")
    description: str = Field(description="Used to tell the model how/when/why to use the tool.")
    args_schema: type[BaseModel] = Field(default=_ArgsSchemaPlaceholder, validate_default=True)

    @field_validator("args_schema", mode="before")
    @classmethod
    def _default_args_schema(cls, v: Any) -> type[BaseModel]:
        if isinstance(v, type) and v is not _ArgsSchemaPlaceholder:
            return v
        return create_model(f"{cls.__name__}Schema", **_fields(inspect.signature(cls._run), skip="self"))

    def _validate_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.args_schema is not None and self.args_schema.model_fields:
            try:
                validated = self.args_schema.model_validate(kwargs)
                return validated.model_dump()
            except Exception as e:
                raise ValueError(f"Tool '{self.name}' arguments validation failed: {e}") from e
        return kwargs

    def run(self, *args: Any, **kwargs: Any) -> Any:
        if not args:
            kwargs = self._validate_kwargs(kwargs)
        result = self._run(*args, **kwargs)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        return result

    async def arun(self, *args: Any, **kwargs: Any) -> Any:
        if not args:
            kwargs = self._validate_kwargs(kwargs)
        return await self._arun(*args, **kwargs)

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{self.__class__.__name__} does not implement _arun.")

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class CrewTool(CrewBaseTool):
    """crewai.tools.base_tool.Tool: ``run`` validates as ``BaseTool.run`` does, then calls ``func``."""

    func: Callable[..., Any]

    def run(self, *args: Any, **kwargs: Any) -> Any:
        if not args:
            kwargs = self._validate_kwargs(kwargs)
        return self.func(*args, **kwargs)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)


def crew_tool(f: Callable[..., Any]) -> CrewTool:
    """crewai's ``@tool`` (without a name): a ``Tool`` whose ``args_schema`` is ``f``'s named parameters."""
    name = f.__name__
    schema = create_model("".join(name.split()).title(), **_fields(inspect.signature(f)))
    return CrewTool(name=name, description=f.__doc__ or "", func=f, args_schema=schema)


def _fields(sig: inspect.Signature, skip: str = "") -> dict[str, Any]:
    """A signature's named parameters as ``create_model`` fields, as crewai reads them."""
    fields: dict[str, Any] = {}
    for name, p in sig.parameters.items():
        if name == skip or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        annotation = Any if p.annotation is p.empty else p.annotation
        fields[name] = (annotation, ... if p.default is p.empty else p.default)
    return fields
