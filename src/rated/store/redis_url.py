"""rated's own store options in a Redis URL, kept apart from redis-py's, and the URL shown without secrets.

A ``redis://`` URL's query belongs to redis-py (``?socket_timeout=2&health_check_interval=30``). redis-py
passes every query key it does not know to its connection class, so an unknown key fails only at the first
command, as a TypeError. rated therefore reads only keys with its own prefix, ``rated_``, which redis-py
never sees: ``redis://host:6379/0?rated_max_outcomes=500000&rated_namespace=prod&socket_timeout=2``.
The older ``#namespace`` fragment still works. Only the options a URL can usefully carry are read here;
``busy_timeout`` has its own setting in ``rated serve`` (``RATED_BUSY_TIMEOUT``).

The module imports no Redis client: ``describe_db`` uses ``redact_url`` for any db string.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlsplit, urlunsplit

from rated.errors import ConfigError
from rated.store.rows import check_max_outcomes

__all__ = ["URL_PREFIX", "redact_url", "split_url", "unknown_option"]

URL_PREFIX = "rated_"


def _max_outcomes(value: str) -> int | None:
    if value.strip().lower() == "none":
        return None
    if not re.fullmatch(r"[0-9]+", value) or int(value) < 1:
        raise ValueError("expected an integer >= 1, or 'none' to keep every record")
    return check_max_outcomes(int(value))


def _namespace(value: str) -> str:
    if not value or ":" in value:  # RedisStore refuses these too; here the message names the URL option
        raise ValueError("expected a non-empty name without ':'")
    return value


_PARSERS: dict[str, Callable[[str], Any]] = {"max_outcomes": _max_outcomes, "namespace": _namespace}


def split_url(url: str) -> tuple[str, dict[str, Any]]:
    """``(the URL for redis-py, rated's options)``: ``rated_*`` query keys and the ``#namespace`` fragment
    are taken out and checked; every other part of the URL is left exactly as written.

    A ``ConfigError`` names the option and its value: an unknown ``rated_*`` key, one given twice, a bad
    value, or a namespace given both as ``rated_namespace`` and as ``#fragment``.
    """
    rest, _, fragment = url.partition("#")  # as urlsplit does: the fragment starts at the first '#'
    base, sep, query = rest.partition("?")
    options: dict[str, Any] = {}
    kept: list[str] = []
    for piece in query.split("&") if sep else []:
        key, _, _ = piece.partition("=")
        name = unquote_plus(key)
        if not name.startswith(URL_PREFIX):
            kept.append(piece)
            continue
        value = parse_qsl(piece, keep_blank_values=True)[0][1]
        option = name[len(URL_PREFIX) :]
        if option not in _PARSERS:
            known = ", ".join(URL_PREFIX + k for k in sorted(_PARSERS))
            raise ConfigError(f"unknown Redis URL option {name}={value!r}: rated reads {known}")
        if option in options:
            raise ConfigError(f"Redis URL option {name} is given twice")
        try:
            options[option] = _PARSERS[option](value)
        except (ValueError, ConfigError) as exc:
            reason = str(exc).split(", got ")[0]  # check_max_outcomes' own wording, without a second value
            raise ConfigError(f"Redis URL option {name}={value!r}: {reason}") from None
    if fragment:
        if "namespace" in options and options["namespace"] != fragment:
            raise ConfigError(
                f"the Redis URL names two namespaces: {URL_PREFIX}namespace={options['namespace']!r} "
                f"and #{fragment}"
            )
        try:
            options["namespace"] = _namespace(fragment)
        except ValueError as exc:
            raise ConfigError(f"Redis URL namespace #{fragment}: {exc}") from None
    return (f"{base}?{'&'.join(kept)}" if kept else base), options


def redact_url(url: str) -> str:
    """``url`` with any password (user info or a ``?password=`` query key) replaced by ``***``: error
    messages and logs must not leak it."""
    try:
        parts = urlsplit(url)
        shown = parts
        if parts.password is not None:
            shown = shown._replace(netloc=f"{parts.username or ''}:***@{parts.netloc.rpartition('@')[2]}")
        if parts.query:
            keys = [p.partition("=")[0] for p in parts.query.split("&")]
            if "password" in map(unquote_plus, keys):
                masked = [
                    k + "=***" if unquote_plus(k) == "password" else p
                    for k, p in zip(keys, parts.query.split("&"), strict=True)
                ]
                shown = shown._replace(query="&".join(masked))
        return url if shown == parts else urlunsplit(shown)
    except ValueError:  # unparsable (e.g. an unclosed IPv6 bracket): hide any user info wholesale
        scheme, sep, rest = url.partition("://")
        rest = re.sub(r"([?&]password=)[^&#]*", r"\1***", rest)
        return f"{scheme}{sep}***@{rest.rpartition('@')[2]}" if "@" in rest else f"{scheme}{sep}{rest}"


def unknown_option(exc: TypeError) -> str | None:
    """What to tell the user when redis-py's connection refused a query key of the URL (it reports it as a
    TypeError about an unexpected keyword argument at the first command), else None."""
    found = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
    if found is None:
        return None
    name = found.group(1)
    hint = f" (rated's own options take the prefix {URL_PREFIX}: ?{URL_PREFIX}{name}=...)"
    return f"unknown option {name!r}{hint if name in _PARSERS else ''}"
