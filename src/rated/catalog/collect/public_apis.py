"""Public APIs: the public-apis list (about 1,400 free APIs) as shipped in the ``public-apis-mcp`` wheel.

Each entry has a name, a one-line description, an auth column (``No`` / ``apiKey`` / ``OAuth`` / a header
name), HTTPS and CORS columns, a category and a link; one entry is one tool (an API, not an operation).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from rated.catalog.collect.archive import Archive, LayoutError
from rated.catalog.collect.base import SourceDef, unique_ids
from rated.catalog.collect.fetch import PackageSpec
from rated.catalog.collect.normalise import clean_text, integration_key, provider_from_url, slug
from rated.catalog.schema import Auth, AuthType, Provenance, Tool

__all__ = ["PACKAGE", "SOURCE", "parse"]

PACKAGE = PackageSpec("pypi", "public-apis-mcp", "0.1.0")
DATA_PATH = "public_apis_mcp/datastore/index.json"
_REQUIRED = ("api", "description", "auth", "category")


def parse(archives: list[Archive]) -> list[Tool]:
    (archive,) = archives
    rows = archive.read_json(DATA_PATH)
    if not isinstance(rows, list) or not rows:
        raise LayoutError(f"{archive.spec}: {DATA_PATH} is not a non-empty list (has its layout changed?)")
    bad = [i for i, r in enumerate(rows) if not isinstance(r, dict) or any(k not in r for k in _REQUIRED)]
    if len(bad) > len(rows) // 10:
        raise LayoutError(
            f"{archive.spec}: {len(bad)} of {len(rows)} entries lack {_REQUIRED} (layout changed?)"
        )
    rows = [r for i, r in enumerate(rows) if i not in set(bad)]
    # same name twice (two "Dog Facts" APIs): told apart by category and link host, not by list position
    tiebreaks = [
        slug(f"{r['category']} {urlsplit(str(r.get('api_link') or '')).hostname or ''}") for r in rows
    ]
    ids = unique_ids("public_apis", [slug(str(r["api"])) for r in rows], tiebreaks)
    prov = Provenance(
        package=archive.spec.name, version=archive.spec.version, license=archive.license(), path=DATA_PATH
    )
    return [_tool(tool_id, r, prov) for tool_id, r in zip(ids, rows, strict=True)]


def _tool(tool_id: str, row: dict[str, Any], prov: Provenance) -> Tool:
    name = clean_text(str(row["api"]))
    link = clean_text(str(row.get("api_link") or "")) or None
    category = clean_text(str(row["category"]))
    return Tool(
        id=tool_id,
        name=name,
        description=clean_text(str(row["description"])),
        source="public_apis",
        endpoint=link,
        auth=_auth(str(row["auth"])),
        tags=(category,) if category else (),
        provider=provider_from_url(link) or slug(name),
        provenance=prov,
        extra={
            "category": category,
            "https": _yes_no(row.get("https")),
            "cors": _yes_no(row.get("cors")),
            "integration": integration_key(name),
            "remote": True,
        },
    )


def _auth(value: str) -> Auth:
    value = value.strip().strip("`").strip()
    lowered = value.lower()
    if lowered in {"", "no", "none"}:
        return Auth(type=AuthType.NONE)
    if lowered == "apikey":
        return Auth(type=AuthType.API_KEY)
    if lowered == "oauth":
        return Auth(type=AuthType.OAUTH2)
    if "key" in lowered:  # X-Mashape-Key and other key headers
        return Auth(type=AuthType.API_KEY, credential=value)
    return Auth(type=AuthType.OTHER, credential=value)


def _yes_no(value: Any) -> str:
    """The list's messy columns (``"Yes |"``, ``"Unkown"``) as ``yes`` / ``no`` / ``unknown``."""
    first = str(value or "").split("|")[0].strip().lower()
    return first if first in {"yes", "no"} else "unknown"


SOURCE = SourceDef(name="public_apis", packages=(PACKAGE,), parse=parse)
