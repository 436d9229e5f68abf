"""Turn an OpenAPI 3.0/3.1 or Swagger 2.0 document into tool records: one tool per operation.

Many agent developers' "tool catalog" is an API spec. Each operation becomes a record with

- ``name``: the ``operationId``, or ``<method>_<path words>`` when the spec gives none;
- ``description``: the summary and the description;
- ``parameters``: one JSON-schema object built from path-level and operation parameters (the operation's
  win) and the JSON request body (its properties merged in when it is an object, else one ``body``);
- ``endpoint``: the first server URL (variables replaced by their defaults; Swagger: scheme, host and
  basePath) joined with the path; ``auth`` from the operation's (or the document's) security
  requirement; ``provider``: the API host, or its title, since an API's operations fail together.

Local ``$ref``s (``#/components/...``, ``#/definitions/...``) are inlined so that parameter names and
descriptions reach the tool text. A reference to itself (a recursive schema), one that cannot be resolved
(external files, typos) and anything past ``MAX_REF_DEPTH`` nested references or ``MAX_INLINED`` inlined
schemas per operation are left as ``{"$ref": ...}``: a huge or cyclic spec stays small and finite.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from rated.errors import CatalogProblem

__all__ = ["MAX_INLINED", "MAX_REF_DEPTH", "is_openapi", "openapi_records"]

MAX_REF_DEPTH = 3  # nested references inlined into one another (top-level fields are what text needs)
MAX_INLINED = 50  # references inlined per operation: a huge, interlinked spec stays small
_MAX_DEPTH = 40  # no inlining below this nesting: records must stay under the loader's MAX_NESTING
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_NAME_JUNK = re.compile(r"[^0-9A-Za-z]+")
_SERVER_VAR = re.compile(r"\{([^{}]+)\}")


def is_openapi(obj: Any) -> bool:
    """An OpenAPI 3.x or Swagger 2.0 document (it says so in its ``openapi`` / ``swagger`` field)."""
    return isinstance(obj, Mapping) and ("openapi" in obj or "swagger" in obj) and "tools" not in obj


def openapi_records(
    spec: Mapping[str, Any], source_name: str | None
) -> tuple[list[tuple[str, dict[str, Any]]], list[CatalogProblem]]:
    """``(location, Tool-shaped record without id)`` per operation, and the problems found."""
    paths = spec.get("paths")
    if not isinstance(paths, Mapping):
        return [], [CatalogProblem("top level", "paths", "an OpenAPI document needs a 'paths' object")]
    info = spec.get("info")
    if not isinstance(info, Mapping):
        info = {}
    base = _base_url(spec)
    host = urlsplit(base).hostname if base else None
    title = info.get("title") if isinstance(info.get("title"), str) else None
    schemes = _security_schemes(spec)
    records: list[tuple[str, dict[str, Any]]] = []
    problems: list[CatalogProblem] = []
    for path, item in paths.items():
        where = f"paths.{path}"
        if isinstance(item, Mapping) and isinstance(item.get("$ref"), str):
            item = _Resolver(spec).resolve(item)
        if not isinstance(item, Mapping):
            problems.append(CatalogProblem(where, "", "a path item must be an object"))
            continue
        for method in METHODS:
            if method not in item:
                continue
            op = item[method]
            loc = f"{where}.{method}"
            if not isinstance(op, Mapping):
                problems.append(CatalogProblem(loc, "", "an operation must be an object"))
                continue
            record = _operation(spec, str(path), method, item, op, schemes)
            record["source"] = source_name or "openapi"
            record["endpoint"] = base.rstrip("/") + str(path) if base else None
            record["provider"] = host or title
            records.append((loc, record))
    return records, problems


# ---------------------------------------------------------------------------------------------- operation


def _operation(
    spec: Mapping[str, Any],
    path: str,
    method: str,
    item: Mapping[str, Any],
    op: Mapping[str, Any],
    schemes: Mapping[str, Any],
) -> dict[str, Any]:
    resolver = _Resolver(spec)
    op_id = op.get("operationId")
    name = op_id.strip() if isinstance(op_id, str) and op_id.strip() else _fallback_name(method, path)
    summary, desc = _text(op.get("summary")), _text(op.get("description"))
    description = desc if summary and desc.startswith(summary) else " ".join(p for p in (summary, desc) if p)
    record: dict[str, Any] = {
        "name": name,
        "description": description,
        "parameters": _parameters(resolver, item.get("parameters"), op),
        "tags": [t for t in op.get("tags") or () if isinstance(t, str)]
        if isinstance(op.get("tags"), list)
        else [],
    }
    auth = _auth(op.get("security", spec.get("security")), schemes)
    if auth:
        record["auth"] = auth
    extra: dict[str, Any] = {"method": method.upper(), "path": path}
    if op.get("deprecated") is True:
        extra["deprecated"] = True
    record["extra"] = extra
    return record


def _fallback_name(method: str, path: str) -> str:
    words = _NAME_JUNK.sub("_", path).strip("_")
    return f"{method}_{words}" if words else method


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _parameters(resolver: _Resolver, path_params: Any, op: Mapping[str, Any]) -> dict[str, Any]:
    """One object schema: path-level then operation parameters (same name+in: the operation's), then body."""
    merged: dict[tuple[str, str], Mapping[str, Any]] = {}
    for group in (path_params, op.get("parameters")):
        for raw in group if isinstance(group, list) else ():
            param = resolver.resolve(raw) if isinstance(raw, Mapping) else None
            if isinstance(param, Mapping) and isinstance(param.get("name"), str):
                merged[(param["name"], str(param.get("in", "")))] = param
    properties: dict[str, Any] = {}
    required: list[str] = []
    for (name, where), param in merged.items():
        if where == "body":  # Swagger 2.0
            _merge_body(properties, required, resolver.resolve(param.get("schema")), param.get("required"))
            continue
        schema = param.get("schema")
        prop = dict(resolver.resolve(schema)) if isinstance(schema, Mapping) else _swagger_schema(param)
        if isinstance(param.get("description"), str) and "description" not in prop:
            prop["description"] = param["description"]
        prop["in"] = where
        properties[name] = prop
        if param.get("required") is True or where == "path":
            required.append(name)
    body = resolver.resolve(op.get("requestBody"))
    if isinstance(body, Mapping):
        _merge_body(properties, required, _json_schema(resolver, body.get("content")), body.get("required"))
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(dict.fromkeys(required))
    return out


def _swagger_schema(param: Mapping[str, Any]) -> dict[str, Any]:
    """A Swagger 2.0 non-body parameter carries its schema keywords inline."""
    keys = ("type", "format", "items", "enum", "default", "minimum", "maximum", "pattern")
    return {k: param[k] for k in keys if k in param}


def _json_schema(resolver: _Resolver, content: Any) -> Any:
    if not isinstance(content, Mapping) or not content:
        return None
    key = next((k for k in content if "json" in str(k)), next(iter(content)))
    media = content[key]
    return resolver.resolve(media.get("schema")) if isinstance(media, Mapping) else None


def _merge_body(properties: dict[str, Any], required: list[str], schema: Any, body_required: Any) -> None:
    if not isinstance(schema, Mapping):
        return
    props = schema.get("properties")
    if schema.get("type", "object") == "object" and isinstance(props, Mapping) and props:
        for name, prop in props.items():
            properties.setdefault(str(name), prop)
        names = schema.get("required")  # draft 3 wrote "required": true on the schema: names none
        if isinstance(names, list):
            required.extend(r for r in names if isinstance(r, str) and r in props)
    else:
        properties.setdefault("body", dict(schema))
        if body_required is True:
            required.append("body")


# ---------------------------------------------------------------------------------------- servers, auth


def _base_url(spec: Mapping[str, Any]) -> str | None:
    servers = spec.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], Mapping):
        url = servers[0].get("url")
        if isinstance(url, str) and url.strip():
            variables = servers[0].get("variables")
            if not isinstance(variables, Mapping):
                variables = {}
            return _SERVER_VAR.sub(lambda m: _default(variables, m.group(1)), url.strip())
    host = spec.get("host")
    if isinstance(host, str) and host.strip():  # Swagger 2.0
        schemes = spec.get("schemes")
        scheme = (
            schemes[0] if isinstance(schemes, list) and schemes and isinstance(schemes[0], str) else "https"
        )
        base_path = spec.get("basePath") if isinstance(spec.get("basePath"), str) else ""
        return f"{scheme}://{host.strip()}{base_path}"
    return None


def _default(variables: Mapping[str, Any], name: str) -> str:
    var = variables.get(name)
    value = var.get("default") if isinstance(var, Mapping) else None
    return str(value) if value is not None else "{" + name + "}"


def _security_schemes(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    components = spec.get("components")
    found = components.get("securitySchemes") if isinstance(components, Mapping) else None
    if found is None:
        found = spec.get("securityDefinitions")  # Swagger 2.0
    return found if isinstance(found, Mapping) else {}


def _auth(security: Any, schemes: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first security requirement's scheme; ``security: []`` means no auth; absent: unknown."""
    if not isinstance(security, list):
        return None
    if not security or any(isinstance(req, Mapping) and not req for req in security):
        return {"type": "none"}
    first = security[0]
    name = next(iter(first), None) if isinstance(first, Mapping) else None
    scheme = schemes.get(name) if name is not None else None
    if not isinstance(scheme, Mapping):
        return {"type": "other", "credential": str(name)} if name else None
    kind = str(scheme.get("type", "")).lower()
    if kind == "apikey":
        return {"type": "api_key", "credential": str(scheme.get("name") or name)}
    if kind in ("oauth2", "openidconnect"):
        return {"type": "oauth2", "credential": str(name)}
    if kind == "basic" or (kind == "http" and str(scheme.get("scheme", "")).lower() == "basic"):
        return {"type": "basic", "credential": str(name)}
    return {"type": "other", "credential": str(name)}


# ----------------------------------------------------------------------------------------------- $ref


class _Resolver:
    """Inline local ``$ref``s, leaving cycles, dangling or external references and overflow as they are."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = spec
        self.inlined = 0

    def resolve(self, node: Any, active: tuple[str, ...] = (), depth: int = 0) -> Any:
        if isinstance(node, list):
            return [self.resolve(x, active, depth + 1) for x in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = self._lookup(ref)
            if (
                target is None
                or ref in active
                or len(active) >= MAX_REF_DEPTH
                or self.inlined >= MAX_INLINED
                or depth >= _MAX_DEPTH
            ):
                return dict(node)
            self.inlined += 1
            resolved = self.resolve(target, (*active, ref), depth)
            if isinstance(resolved, Mapping) and len(node) > 1:  # 3.1: siblings of $ref apply too
                siblings = {k: self.resolve(v, active, depth + 1) for k, v in node.items() if k != "$ref"}
                return {**resolved, **siblings}
            return resolved
        return {k: self.resolve(v, active, depth + 1) for k, v in node.items()}

    def _lookup(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            return None
        node: Any = self.spec
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node
