"""Tool catalogs: the schema, loaders, platform collectors and the static reliability prior."""

from rated.catalog.loaders import load_catalog, save_catalog
from rated.catalog.schema import Auth, AuthType, Provenance, Tool

__all__ = ["Auth", "AuthType", "Provenance", "Tool", "load_catalog", "save_catalog"]
