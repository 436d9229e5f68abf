"""n8n: one tool per node x resource x operation, from ``dist/types/nodes.json`` of ``n8n-nodes-base``.

For each node (its newest version; hidden and trigger nodes skipped) every operation offered for every
resource becomes a tool: the operation's action and description are its text, the node properties shown
for that resource/operation its parameters, the node's first credential its auth (OAuth2 when the
credential extends an OAuth2 type, basic for ``httpBasicAuth``), and the request base URL (node request
defaults, else the credential's test request) its endpoint. Nodes without operations are one tool each.

The package is under the Sustainable Use License: the project ships this collector, never the collected
n8n text (do not commit a catalog built from it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rated.catalog.collect.archive import Archive, LayoutError
from rated.catalog.collect.base import SourceDef, unique_ids
from rated.catalog.collect.fetch import PackageSpec
from rated.catalog.collect.normalise import clean_text, integration_key, provider_from_url, slug
from rated.catalog.schema import Auth, AuthType, Provenance, Tool

__all__ = ["PACKAGE", "SOURCE", "parse"]

PACKAGE = PackageSpec("npm", "n8n-nodes-base", "2.41.2")
NODES = "package/dist/types/nodes.json"
CREDENTIALS = "package/dist/types/credentials.json"

_SKIP_PROPS = frozenset({"resource", "operation", "authentication"})
_SKIP_TYPES = frozenset({"notice", "hidden", "credentialsSelect", "button", "callout", "curlImport"})
_TYPES: Mapping[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "options": {"type": "string"},
    "multiOptions": {"type": "array", "items": {"type": "string"}},
    "collection": {"type": "object"},
    "fixedCollection": {"type": "object"},
    "assignmentCollection": {"type": "object"},
    "filter": {"type": "object"},
    "json": {"type": "object"},
    "dateTime": {"type": "string", "format": "date-time"},
    "color": {"type": "string"},
    "resourceLocator": {"type": "string"},
    "resourceMapper": {"type": "object"},
}
_EXPR = re.compile(r"\{\{\s*\$credentials(?:\.|\[['\"])(\w+)(?:['\"]\])?\s*\}\}")
_ANY_EXPR = re.compile(r"\{\{.*?\}\}")
_OAUTH2_ROOTS = frozenset({"oAuth2Api"})
_BASIC_ROOTS = frozenset({"httpBasicAuth"})


def parse(archives: list[Archive]) -> list[Tool]:
    (archive,) = archives
    nodes = archive.read_json(NODES)
    creds = archive.read_json(CREDENTIALS)
    if not isinstance(nodes, list) or not isinstance(creds, list):
        raise LayoutError(
            f"{archive.spec}: {NODES} / {CREDENTIALS} are not JSON lists (has the layout changed?)"
        )
    credentials = {c["name"]: c for c in creds if isinstance(c, dict) and "name" in c}
    prov = Provenance(
        package=archive.spec.name, version=archive.spec.version, license=archive.license(), path=NODES
    )
    drafts = [d for node in _latest_nodes(nodes) for d in _node_tools(node, credentials)]
    if not drafts:
        raise LayoutError(f"{archive.spec}: no usable nodes in {NODES} (has its layout changed?)")
    ids = unique_ids("n8n", [d.pop("key") for d in drafts])
    return [
        Tool(id=tool_id, source="n8n", provenance=prov, **d) for tool_id, d in zip(ids, drafts, strict=True)
    ]


def _latest_nodes(nodes: list[Any]) -> list[dict[str, Any]]:
    """One entry per node name, the one describing the newest version; hidden and trigger nodes dropped."""
    best: dict[str, dict[str, Any]] = {}
    for node in nodes:
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            continue
        current = best.get(node["name"])
        if current is None or _max_version(node) > _max_version(current):
            best[node["name"]] = node
    keep = []
    for name in sorted(best):
        node = best[name]
        groups = node.get("group") or []
        if node.get("hidden") or "trigger" in groups or name.lower().endswith("trigger"):
            continue
        keep.append(node)
    return keep


def _max_version(node: Mapping[str, Any]) -> float:
    v = node.get("version", 1)
    values = v if isinstance(v, list) else [v]
    return max((float(x) for x in values if isinstance(x, (int, float))), default=1.0)


def _node_tools(node: dict[str, Any], credentials: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    props = [
        p for p in node.get("properties") or [] if isinstance(p, dict) and _visible_in(p, _max_version(node))
    ]
    display = clean_text(node.get("displayName") or node["name"])
    common = _common(node, credentials)
    resources = _options(next((p for p in props if p.get("name") == "resource"), None))
    op_props = [p for p in props if p.get("name") == "operation" and p.get("type") == "options"]
    if not op_props:
        yield {
            "key": slug(node["name"]),
            "name": slug(node["name"]),
            "description": clean_text(node.get("description")) or display,
            "parameters": _schema(props, None, None),
            **common,
        }
        return
    seen: set[tuple[str | None, str]] = set()
    choices: Sequence[dict[str, Any] | None] = resources if resources else [None]
    for resource in choices:
        for op_prop in op_props:
            if not _shown_for(op_prop, resource, None):
                continue
            for op in _options(op_prop):
                r_value = resource["value"] if resource else None
                if (r_value, op["value"]) in seen:
                    continue
                seen.add((r_value, op["value"]))
                yield _operation(node, display, props, resource, op, common)


def _operation(
    node: Mapping[str, Any],
    display: str,
    props: list[dict[str, Any]],
    resource: Mapping[str, Any] | None,
    op: Mapping[str, Any],
    common: Mapping[str, Any],
) -> dict[str, Any]:
    r_value = str(resource["value"]) if resource else None
    parts = [node["name"], *([r_value] if r_value else []), str(op["value"])]
    action = clean_text(op.get("action") or op.get("name"))
    detail = clean_text(op.get("description"))
    text = f"{action} in {display}." if action else display
    if detail and detail.rstrip(".").lower() != action.rstrip(".").lower():
        text = f"{text} {detail if detail.endswith('.') else detail + '.'}"
    tags = list(common["tags"])
    if resource:
        tags.append(clean_text(resource.get("name") or r_value))
    return {
        **common,
        "key": ".".join(slug(p) for p in parts),
        "name": "_".join(slug(p) for p in parts),
        "description": text,
        "parameters": _schema(props, r_value, str(op["value"])),
        "tags": tuple(dict.fromkeys(t for t in tags if t)),
        "extra": {**common["extra"], "resource": r_value, "operation": str(op["value"])},
    }


def _common(node: Mapping[str, Any], credentials: Mapping[str, Any]) -> dict[str, Any]:
    cred_refs = [c for c in node.get("credentials") or [] if isinstance(c, dict) and c.get("name")]
    cred = credentials.get(cred_refs[0]["name"]) if cred_refs else None
    auth = _auth(cred_refs[0]["name"], credentials) if cred_refs else Auth(type=AuthType.NONE)
    base = _base_url(node, cred)
    endpoint = base if base and base.startswith(("http://", "https://")) else None
    integration = integration_key(node["name"]) or slug(node["name"])
    extra: dict[str, Any] = {"node": node["name"], "integration": integration}
    if base and not endpoint:
        extra["endpoint_template"] = base  # the user supplies the host (self-hosted service)
    docs = ((node.get("codex") or {}).get("resources") or {}).get("primaryDocumentation") or []
    if docs and isinstance(docs[0], dict) and docs[0].get("url"):
        extra["docs"] = docs[0]["url"]
    categories = (node.get("codex") or {}).get("categories") or []
    return {
        "endpoint": endpoint,
        "auth": auth,
        "tags": tuple(clean_text(c) for c in categories if isinstance(c, str)),
        "provider": provider_from_url(endpoint) or integration,
        "extra": extra,
    }


def _auth(name: str, credentials: Mapping[str, Any]) -> Auth:
    """OAuth2 if the credential extends an OAuth2 type (transitively), basic for HTTP basic auth."""
    seen: set[str] = set()
    stack = [name]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in _OAUTH2_ROOTS:
            return Auth(type=AuthType.OAUTH2, credential=name)
        if current in _BASIC_ROOTS:
            return Auth(type=AuthType.BASIC, credential=name)
        stack.extend((credentials.get(current) or {}).get("extends") or [])
    if name.lower().endswith("oauth2api"):
        return Auth(type=AuthType.OAUTH2, credential=name)
    cred = credentials.get(name) or {}
    fields = {str(p.get("name", "")).lower() for p in cred.get("properties") or [] if isinstance(p, dict)}
    if {"user", "password"} <= fields or {"username", "password"} <= fields:
        return Auth(type=AuthType.BASIC, credential=name)
    if cred.get("properties") is not None or name.lower().endswith("api"):
        return Auth(type=AuthType.API_KEY, credential=name)
    return Auth(type=AuthType.OTHER, credential=name)


def _base_url(node: Mapping[str, Any], cred: Mapping[str, Any] | None) -> str | None:
    candidates = [(node.get("requestDefaults") or {}).get("baseURL")]
    if cred:
        request = (cred.get("test") or {}).get("request") or {}
        candidates.append(request.get("baseURL") or request.get("url"))
    for raw in candidates:
        if isinstance(raw, str) and raw.strip():
            url = _EXPR.sub(lambda m: "{" + m.group(1) + "}", raw.strip().lstrip("="))
            url = _ANY_EXPR.sub("{value}", url).strip()
            if url:
                return url
    return None


def _options(prop: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    if not prop:
        return []
    return [o for o in prop.get("options") or [] if isinstance(o, dict) and "value" in o]


def _visible_in(prop: Mapping[str, Any], version: float) -> bool:
    """Whether a property applies to the node's newest version (``displayOptions.show['@version']``)."""
    show = (prop.get("displayOptions") or {}).get("show") or {}
    allowed = show.get("@version")
    if not isinstance(allowed, list):
        return True
    for cond in allowed:
        if isinstance(cond, (int, float)) and float(cond) == version:
            return True
        if isinstance(cond, dict) and isinstance(cond.get("_cnd"), dict):
            (op, bound), *_ = cond["_cnd"].items() or [("", 0)]
            if isinstance(bound, (int, float)) and _compare(op, version, float(bound)):
                return True
    return False


def _compare(op: str, value: float, bound: float) -> bool:
    return {
        "gte": value >= bound,
        "gt": value > bound,
        "lte": value <= bound,
        "lt": value < bound,
        "eq": value == bound,
        "not": value != bound,
    }.get(op, True)


def _shown_for(prop: Mapping[str, Any], resource: Mapping[str, Any] | None, operation: str | None) -> bool:
    display = prop.get("displayOptions") or {}
    show, hide = display.get("show") or {}, display.get("hide") or {}
    r_value = resource["value"] if resource else None
    if "resource" in show and r_value not in show["resource"]:
        return False
    if operation is not None and "operation" in show and operation not in show["operation"]:
        return False
    if r_value is not None and r_value in (hide.get("resource") or []):
        return False
    return not (operation is not None and operation in (hide.get("operation") or []))


def _schema(props: list[dict[str, Any]], resource: str | None, operation: str | None) -> dict[str, Any]:
    res = {"value": resource} if resource is not None else None
    out: dict[str, Any] = {}
    required: list[str] = []
    for prop in props:
        name = prop.get("name")
        if not isinstance(name, str) or name in _SKIP_PROPS or prop.get("type") in _SKIP_TYPES or name in out:
            continue
        if operation is not None and not _shown_for(prop, res, operation):
            continue
        spec = dict(_TYPES.get(str(prop.get("type")), {}))
        desc = clean_text(prop.get("description")) or clean_text(prop.get("displayName"))
        if desc:
            spec["description"] = desc
        options = _options(prop)
        if prop.get("type") == "options" and options and all(isinstance(o["value"], str) for o in options):
            spec["enum"] = [o["value"] for o in options]
        default = prop.get("default")
        if (
            isinstance(default, (str, int, float, bool))
            and default != ""
            and not str(default).startswith("=")
        ):
            spec["default"] = default
        out[name] = spec
        if prop.get("required"):
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": out}
    if required:
        schema["required"] = required
    return schema


SOURCE = SourceDef(
    name="n8n",
    packages=(PACKAGE,),
    parse=parse,
    want=(NODES, CREDENTIALS, "package/package.json", "package/LICENSE.md"),
    note="n8n-nodes-base is under the Sustainable Use License: do not redistribute the collected text",
)
