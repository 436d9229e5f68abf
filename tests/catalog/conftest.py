"""Fixtures of the catalog tests (defined in catalog_fixtures.py)."""

from catalog_fixtures import seed_cache

__all__ = ["seed_cache"]
