"""Service settings: one validated object, read from ``RATED_*`` environment variables or given directly.

pydantic-settings is not a dependency; ``Settings.from_env`` does the small part of its job we need.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from rated.errors import ConfigError
from rated.validation_text import pydantic_reason

__all__ = ["ENV_PREFIX", "Settings"]

ENV_PREFIX = "RATED_"
_SECRET = frozenset({"api_key"})  # fields whose value an error message must not show


class Settings(BaseModel):
    """How the HTTP service and the MCP server run. ``db``: a SQLite path or ``redis://`` URL."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    db: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    default_k: int = Field(default=5, ge=1)
    max_k: int = Field(default=50, ge=1)
    max_batch: int = Field(default=64, ge=1)
    busy_timeout: float = Field(default=5.0, gt=0)
    max_body_bytes: int = Field(default=1 << 20, ge=1)  # 1 MiB: a full batch (64 x 10,000 ASCII chars) fits
    api_key: SecretStr | None = None  # set: every route but /health and the docs needs it (service.auth)
    workers: int = Field(default=1, ge=1)  # HTTP worker processes (rated serve); each opens the store itself
    # health probes of suspected tools (rated.probing): seconds between rounds (MIN_EVERY..MAX_EVERY), or off
    probe_every: float | None = None
    probe_budget: int = Field(default=3, ge=1)  # tools checked per round (per worker process)
    probe_timeout: float = 5.0  # seconds a probe may wait for an answer (above 0, at most MAX_TIMEOUT)

    @field_validator("api_key")
    @classmethod
    def _key_not_blank(cls, key: SecretStr | None) -> SecretStr | None:
        if key is not None and not key.get_secret_value().strip():
            raise ValueError("must not be empty (unset it to run without a key)")
        text = "" if key is None else key.get_secret_value()
        if key is not None and (not text.isascii() or not text.isprintable() or text != text.strip()):
            # headers reach the app as Latin-1 and Basic passwords as ASCII: such a key would never match
            raise ValueError("must be printable ASCII without leading or trailing spaces")
        return key

    @field_validator("probe_every")
    @classmethod
    def _probe_interval(cls, every: float | None) -> float | None:
        from rated import probing  # read at each check: tests lower the floor to run rounds fast

        if every is not None and not probing.MIN_EVERY <= every <= probing.MAX_EVERY:
            raise ValueError(
                f"must be {probing.MIN_EVERY:g} to {probing.MAX_EVERY:g} seconds: each probe round re-reads "
                "the store under the retriever's lock, so a shorter interval polls it in a loop"
            )
        return every

    @field_validator("probe_timeout")
    @classmethod
    def _probe_timeout(cls, timeout: float) -> float:
        from rated.probing import MAX_TIMEOUT

        if not 0 < timeout <= MAX_TIMEOUT:  # also refuses nan and inf
            raise ValueError(
                f"must be above 0 and at most {MAX_TIMEOUT:g} seconds (shutdown waits for a probe)"
            )
        return timeout

    @model_validator(mode="after")
    def _k_within_limit(self) -> Settings:
        if self.default_k > self.max_k:
            raise ValueError(
                f"default_k ({self.default_k}, {ENV_PREFIX}DEFAULT_K) must not exceed "
                f"max_k ({self.max_k}, {ENV_PREFIX}MAX_K)"
            )
        return self

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """``RATED_DB``, ``RATED_PORT``, ... then ``overrides`` (``None`` values are ignored)."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            key = ENV_PREFIX + name.upper()
            if key in env:
                values[name] = env[key]
        given = {k: v for k, v in overrides.items() if v is not None}
        values.update(given)
        try:
            return cls(**values)
        except ValidationError as exc:
            problems = "; ".join(_problem(e["loc"], pydantic_reason(e), given) for e in exc.errors())
            raise ConfigError(f"invalid service settings: {problems}") from None

    def to_env(self) -> dict[str, str]:
        """These settings as the ``RATED_*`` variables ``from_env`` reads back (``None`` fields left out):
        how ``rated serve --workers N`` hands the settings it resolved to worker processes."""
        env = {}
        for name, value in self:
            if value is not None:
                text = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
                env[ENV_PREFIX + name.upper()] = text
        return env


def _problem(loc: tuple[Any, ...], msg: str, given: Mapping[str, Any]) -> str:
    """One field's problem, named where its value came from: the argument (e.g. ``--port``) or the
    environment variable."""
    if not loc:
        return msg
    name = ".".join(map(str, loc))
    if name not in given:
        return f"{ENV_PREFIX}{name.upper()}: {msg}"
    shown = "(given; not shown)" if name in _SECRET else repr(given[name])  # a key is never echoed
    return f"{name} {shown}: {msg}"
