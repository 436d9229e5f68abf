"""The normalised tool record every catalog source is converted into."""

from __future__ import annotations

import unicodedata
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rated.shown import shown

__all__ = ["PROVIDER_PREFIX", "Auth", "AuthType", "Provenance", "Tool"]

MAX_ID_LENGTH = 512
#: what the state key of a provider's shared component starts with (``provider:NAME``, in the policy and
#: the store; ``rated.policy.rated`` takes it from here): no tool id may, or that tool would share provider
#: NAME's state, and adding it would drop that state
PROVIDER_PREFIX = "provider:"


class AuthType(StrEnum):
    NONE = "none"
    API_KEY = "api_key"
    OAUTH2 = "oauth2"
    BASIC = "basic"
    OTHER = "other"
    UNKNOWN = "unknown"  # the source says nothing: a metadata defect when the tool clearly needs auth


class Auth(BaseModel):
    """How the tool authenticates; ``credential`` names the credential or env var (never its value)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: AuthType = AuthType.UNKNOWN
    credential: str | None = None


class Provenance(BaseModel):
    """Where the record came from, so every tool can be traced to a package release and its license."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    package: str | None = None
    version: str | None = None
    license: str | None = None
    path: str | None = None  # file inside the package, or URL of the source document


class Tool(BaseModel):
    """One callable tool.

    ``id`` is stable and unique within a catalog, and does not start with ``provider:`` (``PROVIDER_PREFIX``:
    reserved for providers' shared state). ``provider`` groups tools that fail together (same API
    host, credential or MCP server); ``group`` links near-duplicate listings of one integration across
    platforms, so that training never uses one as a negative for the other.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    name: str = Field(min_length=1)
    description: str = ""
    source: str = "custom"  # langchain | crewai | llamaindex | n8n | public_apis | openai | mcp | custom ...
    parameters: dict[str, Any] = Field(default_factory=dict)  # JSON-schema-like object
    endpoint: str | None = None
    auth: Auth = Field(default_factory=Auth)
    tags: tuple[str, ...] = ()
    provider: str | None = None
    group: str | None = None
    provenance: Provenance | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", "name")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must not be blank")
        return value

    @field_validator("id")
    @classmethod
    def _printable_id(cls, value: str) -> str:
        # a tab or newline inside an id is a data error that no one could type back (rated feedback ID)
        # isprintable() (C, no control character can pass it) first: every stored tool is checked on open
        if not value.isprintable() and any(unicodedata.category(c) == "Cc" for c in value):
            raise ValueError("must not contain control characters (tab, newline, ...)")
        return value

    @field_validator("id")
    @classmethod
    def _not_a_provider_key(cls, value: str) -> str:
        # the policy and the store key a tool's state by its id: this one would be a provider's
        if value.startswith(PROVIDER_PREFIX):
            provider = shown(value.removeprefix(PROVIDER_PREFIX))
            raise ValueError(
                f"{shown(value)} starts with {PROVIDER_PREFIX!r}, which is reserved: rated keeps the state "
                f"shared by the tools of provider {provider} under that key; choose another id (or, for "
                "ids made as SOURCE:NAME, another source name)"
            )
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _tags_as_tuple(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, str):
            return (value,)
        if isinstance(value, (list, tuple, set, frozenset)):
            return tuple(value)
        return value  # a number or an object: let validation reject it, as for any other field

    @property
    def provider_key(self) -> str:
        """The provider, or the tool id when none is known (a tool is then its own provider)."""
        return self.provider or self.id
