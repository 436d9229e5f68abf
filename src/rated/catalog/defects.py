"""Metadata defects the paper counts, per tool, so a user can see *why* a tool's prior is low.

Checks are offline and conservative (no link is fetched):

- ``missing_description``: blank, or only repeats the name;
- ``missing_auth``: auth type ``unknown`` although the tool clearly talks to a service or needs a secret
  (it has an endpoint, a named credential, a secret-like parameter, or its text mentions API keys/OAuth);
- ``missing_endpoint``: the tool needs a credential for a remote service (or says it is remote) but gives
  no endpoint/base URL;
- ``malformed_endpoint``: the endpoint is not an absolute http(s)/ws(s) URL with a plausible host
  (``{placeholders}`` such as ``https://{subdomain}.example.com`` are allowed);
- ``name_description_mismatch``: the name/description consistency ``r_cons`` is below a threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from urllib.parse import urlsplit

import numpy as np

from rated.catalog.schema import AuthType, Tool
from rated.errors import ConfigError

__all__ = ["MISMATCH_THRESHOLD", "Defect", "endpoint_is_valid", "find_defects", "tool_defects"]

#: r_cons below this flags a name/description mismatch (cosine of name and description embeddings).
MISMATCH_THRESHOLD = 0.2


class Defect(StrEnum):
    MISSING_DESCRIPTION = "missing_description"
    MISSING_AUTH = "missing_auth"
    MISSING_ENDPOINT = "missing_endpoint"
    MALFORMED_ENDPOINT = "malformed_endpoint"
    NAME_MISMATCH = "name_description_mismatch"


_SECRET_PARAM = re.compile(r"(api[_-]?key|apikey|access[_-]?token|secret|password|bearer|credential)", re.I)
_AUTH_TEXT = re.compile(
    r"\b(api[ -]?key|oauth2?|access token|bearer token|credentials?|authenticat\w*)\b", re.I
)
_PLACEHOLDER = re.compile(r"\{\{[^}]*\}\}|\{[^}]*\}|<[^>]*>|\$\w+")
_HOST = re.compile(
    r"^(localhost|[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+|\[[0-9a-f:.]+\])$", re.I
)
_FILL = "rated-placeholder"
_REMOTE_AUTH = frozenset({AuthType.API_KEY, AuthType.OAUTH2, AuthType.BASIC, AuthType.OTHER})


def find_defects(
    tools: Sequence[Tool], r_cons: np.ndarray | None = None, *, mismatch_threshold: float = MISMATCH_THRESHOLD
) -> list[tuple[str, ...]]:
    """Defect codes per tool, aligned with ``tools``; pass ``PriorResult.r_cons`` to check mismatches."""
    if r_cons is not None and len(r_cons) != len(tools):
        raise ConfigError(f"r_cons has {len(r_cons)} entries for {len(tools)} tools")
    return [
        tool_defects(t, None if r_cons is None else float(r_cons[i]), mismatch_threshold=mismatch_threshold)
        for i, t in enumerate(tools)
    ]


def tool_defects(
    tool: Tool, r_cons: float | None = None, *, mismatch_threshold: float = MISMATCH_THRESHOLD
) -> tuple[str, ...]:
    """Defect codes of one tool (empty tuple when none)."""
    found: list[Defect] = []
    description = " ".join(tool.description.split())
    if not description or description.lower() == " ".join(tool.name.split()).lower():
        found.append(Defect.MISSING_DESCRIPTION)
    if tool.auth.type == AuthType.UNKNOWN and _needs_auth(tool):
        found.append(Defect.MISSING_AUTH)
    endpoint = (tool.endpoint or "").strip()
    if not endpoint:
        if _is_remote(tool):
            found.append(Defect.MISSING_ENDPOINT)
    elif not endpoint_is_valid(endpoint):
        found.append(Defect.MALFORMED_ENDPOINT)
    if description and r_cons is not None and r_cons < mismatch_threshold:
        found.append(Defect.NAME_MISMATCH)
    return tuple(d.value for d in found)


def endpoint_is_valid(url: str) -> bool:
    """An absolute http(s)/ws(s) URL with a plausible host; ``{placeholders}`` count as valid labels."""
    if any(c.isspace() for c in url.strip()):
        return False
    filled = _PLACEHOLDER.sub(_FILL, url.strip())
    try:
        parts = urlsplit(filled)
        host = parts.hostname or ""
        _ = parts.port  # raises on a non-numeric port
    except ValueError:
        return False
    host_ok = bool(_HOST.match(host)) or host == _FILL  # a host that is one placeholder is user-supplied
    return parts.scheme.lower() in {"http", "https", "ws", "wss"} and host_ok


def _secret_params(tool: Tool) -> bool:
    props = tool.parameters.get("properties") if isinstance(tool.parameters, dict) else None
    return isinstance(props, dict) and any(_SECRET_PARAM.search(str(k)) for k in props)


def _needs_auth(tool: Tool) -> bool:
    return bool(
        (tool.endpoint and tool.endpoint.strip())
        or tool.auth.credential
        or _secret_params(tool)
        or _AUTH_TEXT.search(tool.description)
    )


def _is_remote(tool: Tool) -> bool:
    if tool.extra.get("endpoint_template"):  # the user supplies the host (self-hosted service): not missing
        return False
    return bool(tool.extra.get("remote") is True or tool.auth.type in _REMOTE_AUTH or tool.auth.credential)
