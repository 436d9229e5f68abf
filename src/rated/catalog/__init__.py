"""Tool catalogs: the schema, loaders, platform collectors and the static reliability prior."""

from rated.catalog.schema import Auth, AuthType, Provenance, Tool

__all__ = ["Auth", "AuthType", "Provenance", "Tool"]
