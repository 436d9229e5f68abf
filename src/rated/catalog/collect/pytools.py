"""Tool classes declared in Python source: ``BaseTool`` subclasses (LangChain, CrewAI) read with ``ast``.

A concrete tool class has a literal ``name`` (own or inherited within the package). Its description is the
``description`` attribute (or the class docstring), its parameters come from ``args_schema`` (a pydantic
model) or else from the ``_run`` signature, and its credentials and endpoint from the env-var and URL
constants of its module, its package bases' modules and the modules of the clients it holds as fields.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rated.catalog.collect.archive import Archive, LayoutError
from rated.catalog.collect.base import auth_from_credentials, unique_ids
from rated.catalog.collect.normalise import clean_docstring, clean_text, provider_from_url, slug
from rated.catalog.collect.pysource import ClassInfo, PySource, is_env_var
from rated.catalog.schema import Provenance, Tool

__all__ = ["ToolClass", "related_modules", "to_tools", "tool_classes", "wheel_tools"]


@dataclass(frozen=True)
class ToolClass:
    cls: ClassInfo
    name: str
    description: str
    parameters: dict[str, Any]
    env_vars: tuple[str, ...]
    urls: tuple[str, ...]
    hints: str = ""  # lower-cased constants of the related modules, for auth hints (OAuth files ...)
    extra: dict[str, Any] = field(default_factory=dict)


def related_modules(src: PySource, cls: ClassInfo) -> list[str]:
    """The class's module, its package bases' modules, and the modules of package classes it annotates."""
    mods: list[str] = []
    for item in src.mro(cls):
        if not isinstance(item, ClassInfo):
            continue
        if item.module not in mods:
            mods.append(item.module)
        for node in item.node.body:
            if isinstance(node, ast.AnnAssign):
                for sub in ast.walk(node.annotation):
                    if isinstance(sub, (ast.Name, ast.Attribute)):
                        hit = src.resolve_class(item.module, sub)
                        if isinstance(hit, ClassInfo) and hit.module not in mods:
                            mods.append(hit.module)
    return mods


def tool_classes(src: PySource, prefix: str, is_base: Callable[[str], bool]) -> list[ToolClass]:
    """Concrete tool classes in modules under ``prefix`` deriving from an outside base ``is_base`` accepts."""
    found: list[ToolClass] = []
    for cls in src.classes(prefix):
        if cls.name.startswith("_") or not src.derives_from(cls, is_base):
            continue
        hit = src.class_attr(cls, "name")
        name = clean_text(src.string(*hit)) if hit else ""
        if not name:
            continue
        hit = src.class_attr(cls, "description")
        description = clean_text(src.string(*hit)) if hit else ""
        if not description:
            description = clean_docstring(ast.get_docstring(cls.node))
        mods = related_modules(src, cls)
        base_url = src.class_attr(cls, "base_url")
        urls = [u for u in [src.string(*base_url) if base_url else None] if u]
        urls += [u for u in src.urls(mods) if u not in urls]
        env = _declared_env_vars(src, cls) or src.env_vars(mods)
        hints = " ".join(t.lower() for m in mods for t in src.constants(m) if len(t) < 200)
        found.append(
            ToolClass(
                cls=cls,
                name=name,
                description=description,
                parameters=_parameters(src, cls),
                env_vars=tuple(env),
                urls=tuple(urls),
                hints=hints,
            )
        )
    return found


def _parameters(src: PySource, cls: ClassInfo) -> dict[str, Any]:
    hit = src.class_attr(cls, "args_schema")
    if hit is not None:
        module, expr = hit
        target = src.resolve_class(module, expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        if isinstance(target, ClassInfo):
            return src.model_schema(target)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "Field":
            default = (
                expr.args[0]
                if expr.args
                else next((k.value for k in expr.keywords if k.arg == "default"), None)
            )
            target = (
                src.resolve_class(module, default) if isinstance(default, (ast.Name, ast.Attribute)) else None
            )
            if isinstance(target, ClassInfo):
                return src.model_schema(target)
    run = src.method(cls, "_run")
    if run is None:
        return {}
    return src.signature_schema(run[0], run[1])


def _declared_env_vars(src: PySource, cls: ClassInfo) -> list[str]:
    """Env vars a class declares itself (CrewAI's ``env_vars: list[EnvVar] = [EnvVar(name=...)]``)."""
    hit = src.class_attr(cls, "env_vars")
    if hit is None:
        return []
    out: list[str] = []
    for node in ast.walk(hit[1]):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and is_env_var(node.value):
            if node.value not in out:
                out.append(node.value)
    return out


def to_tools(
    source: str,
    archive: Archive,
    src: PySource,
    classes: list[ToolClass],
    integration_of: Callable[[ToolClass], str],
) -> list[Tool]:
    """Normalised ``Tool`` records for tool classes (ids ``source:slug(name)``, class name as tie-break)."""
    tiebreaks = [slug(f"{c.cls.module.rpartition('.')[2]}_{c.cls.name}") for c in classes]
    ids = unique_ids(source, [slug(c.name) for c in classes], tiebreaks)
    license_ = archive.license()
    tools: list[Tool] = []
    for tool_id, c in zip(ids, classes, strict=True):
        endpoint = c.urls[0] if c.urls else None
        integration = integration_of(c)
        extra: dict[str, Any] = {"class": c.cls.qualname, "integration": integration, **c.extra}
        if c.env_vars:
            extra["env_vars"] = list(c.env_vars)
        tools.append(
            Tool(
                id=tool_id,
                name=c.name,
                description=c.description,
                source=source,
                parameters=c.parameters,
                endpoint=endpoint,
                auth=auth_from_credentials(c.env_vars, c.hints),
                tags=(integration,) if integration else (),
                provider=provider_from_url(endpoint) or integration or None,
                provenance=Provenance(
                    package=archive.spec.name,
                    version=archive.spec.version,
                    license=license_,
                    path=src.path(c.cls.module),
                ),
                extra=extra,
            )
        )
    return tools


def wheel_tools(
    archive: Archive,
    source: str,
    *,
    tools_package: str,
    bases: frozenset[str],
    integration_of: Callable[[ToolClass], str],
    class_prefix: str | None = None,
) -> list[Tool]:
    """The ``Tool`` records of one wheel's tool classes: subclasses of ``bases`` under ``class_prefix``.

    The top-level package of ``tools_package`` is read with ``ast``; ``tools_package`` must hold modules
    (else the wheel's layout has changed), and ``class_prefix`` defaults to that top-level package.
    """
    top = tools_package.split(".")[0]
    src = PySource.from_archive(archive, f"{top}/")
    if not src.modules(tools_package):
        where = tools_package.replace(".", "/")
        raise LayoutError(f"{archive.spec}: no {where}/ modules in the wheel (has its layout changed?)")
    prefix = class_prefix or f"{top}."
    classes = tool_classes(src, prefix, lambda q: q.rpartition(".")[2] in bases)
    if not classes:
        raise LayoutError(
            f"{archive.spec}: no BaseTool subclasses with a literal name in {prefix.rstrip('.')}"
        )
    return to_tools(source, archive, src, classes, integration_of)
