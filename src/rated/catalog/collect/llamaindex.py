"""LlamaIndex: the ``spec_functions`` of each ``BaseToolSpec`` in pinned ``llama-index-tools-*`` wheels.

Each listed function becomes a tool: its name, the prose of its docstring, and its signature (with the
docstring's ``Args:`` descriptions) as parameters. Credentials are the env vars the module reads and the
secret-like ``__init__`` arguments of the spec (``api_key``, ``slack_token``); the endpoint is the first URL
constant of the spec's module.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from rated.catalog.collect.archive import Archive, LayoutError
from rated.catalog.collect.base import SourceDef, auth_from_credentials, unique_ids
from rated.catalog.collect.fetch import PackageSpec
from rated.catalog.collect.normalise import clean_docstring, integration_key, provider_from_url, slug
from rated.catalog.collect.pysource import ClassInfo, PySource
from rated.catalog.collect.pytools import related_modules
from rated.catalog.schema import Provenance, Tool

__all__ = ["PACKAGES", "SOURCE", "parse"]

# A few dozen of the most used tool packages (not all of them); versions verified with `pip download`.
_PINS = """
agentql 1.4.0, arxiv 0.6.0, azure-code-interpreter 0.7.0, azure-cv 0.6.0, azure-speech 0.6.0,
azure-translate 0.6.0, bing-search 0.6.0, box 0.6.0, brave-search 0.6.0, brightdata 0.4.0, cassandra 0.6.0,
chatgpt-plugin 0.6.0, code-interpreter 0.6.0, cogniswitch 0.6.0, dappier 0.6.0, database 0.6.0,
duckduckgo 0.6.0, elevenlabs 0.4.0, exa 0.6.0, finance 0.6.0, google 0.8.0, graphql 0.6.0,
ionic-shopping 0.6.0, jira 0.4.0, linkup-research 0.6.0, measurespace 0.3.0, metaphor 0.6.0, multion 0.7.0,
neo4j 0.6.0, notion 0.6.0, openai-image-generation 0.7.0, openapi 0.7.0, passio-nutrition-ai 0.3.0,
playgrounds 0.6.0, playwright 0.5.0, python-file 0.6.0, requests 0.7.0, salesforce 0.6.0, shopify 0.6.0,
slack 0.6.0, tavily-research 0.6.0, text-to-image 0.6.0, valyu 0.7.0, vectara-query 0.6.0, waii 0.6.0,
weather 0.6.0, wikipedia 0.6.0, wolfram-alpha 0.7.0, yahoo-finance 0.6.0, yelp 0.6.0, zapier 0.6.0
"""
PACKAGES = tuple(
    PackageSpec("pypi", f"llama-index-tools-{name}", version)
    for name, version in (item.split() for item in _PINS.replace("\n", " ").split(",") if item.strip())
)
_SECRET_ARG = re.compile(r"(api_?key|token|secret|password|credential|access_key|subscription_key)", re.I)


def parse(archives: list[Archive]) -> list[Tool]:
    """All wheels share the ``llama_index.tools`` namespace (one spec may subclass another package's spec),
    so their sources are read as one tree; each tool's provenance is the wheel its module came from."""
    files: dict[str, str] = {}
    owner: dict[str, Archive] = {}
    for archive in archives:
        for name in archive.glob("llama_index/tools/*.py"):
            files[name] = archive.read_text(name)
            owner[name] = archive
    if not files:
        raise LayoutError(
            "no llama_index/tools/ modules in the LlamaIndex wheels (has their layout changed?)"
        )
    src = PySource(files)
    drafts = [d for cls in src.classes("llama_index.tools.") for d in _spec_tools(src, cls, owner)]
    if not drafts:
        raise LayoutError("no BaseToolSpec with literal spec_functions in the LlamaIndex wheels")
    keys = [d.pop("key") for d in drafts]
    ids = unique_ids("llamaindex", keys, [slug(d["provenance"].package or "") for d in drafts])
    return [Tool(id=tool_id, **d) for tool_id, d in zip(ids, drafts, strict=True)]


def _spec_tools(src: PySource, cls: ClassInfo, owner: dict[str, Archive]) -> list[dict[str, Any]]:
    if not src.derives_from(cls, lambda q: q.rpartition(".")[2] == "BaseToolSpec"):
        return []
    functions = _spec_functions(src, cls)
    if not functions:
        return []
    archive = owner[src.path(cls.module)]
    mods = related_modules(src, cls)
    urls = src.urls(mods)
    credentials = src.env_vars(mods) or _secret_init_args(src, cls)
    hints = " ".join(t.lower() for m in mods for t in src.constants(m) if len(t) < 200)
    endpoint = urls[0] if urls else None
    integration = integration_key(cls.name) or slug(cls.name)
    spec_key = slug(cls.name).removesuffix("_tool_spec").removesuffix("_spec") or slug(cls.name)
    drafts: list[dict[str, Any]] = []
    for fn_name in functions:
        hit = src.method(cls, fn_name)
        if hit is None:
            continue
        module, fn = hit
        extra: dict[str, Any] = {"class": cls.qualname, "function": fn_name, "integration": integration}
        if credentials:
            extra["env_vars"] = credentials
        drafts.append(
            {
                "key": f"{spec_key}.{fn_name}",
                "name": fn_name,
                "description": clean_docstring(ast.get_docstring(fn)),
                "source": "llamaindex",
                "parameters": src.signature_schema(module, fn),
                "endpoint": endpoint,
                "auth": auth_from_credentials(credentials, hints),
                "tags": (integration,),
                "provider": provider_from_url(endpoint) or integration,
                "provenance": Provenance(
                    package=archive.spec.name,
                    version=archive.spec.version,
                    license=archive.license(),
                    path=src.path(cls.module),
                ),
                "extra": extra,
            }
        )
    return drafts


def _spec_functions(src: PySource, cls: ClassInfo) -> list[str]:
    """Literal ``spec_functions`` entries (a ``(sync, async)`` pair counts once, by its sync name)."""
    hit = src.class_attr(cls, "spec_functions")
    if hit is None or not isinstance(hit[1], (ast.List, ast.Tuple)):
        return []
    names: list[str] = []
    for elt in hit[1].elts:
        if isinstance(elt, ast.Tuple) and elt.elts:
            elt = elt.elts[0]
        value = src.string(hit[0], elt)
        if value and value not in names:
            names.append(value)
    return names


def _secret_init_args(src: PySource, cls: ClassInfo) -> list[str]:
    hit = src.method(cls, "__init__")
    if hit is None:
        return []
    args = [*hit[1].args.args, *hit[1].args.kwonlyargs]
    return [a.arg for a in args if _SECRET_ARG.search(a.arg)]


SOURCE = SourceDef(name="llamaindex", packages=PACKAGES, parse=parse)
