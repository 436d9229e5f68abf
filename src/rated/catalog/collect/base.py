"""What every collector shares: the source definition, auth inference, and stable id assignment."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rated.catalog.collect.archive import Archive
from rated.catalog.collect.fetch import PackageSpec
from rated.catalog.schema import Auth, AuthType, Provenance, Tool

__all__ = ["SourceDef", "auth_from_credentials", "provenance", "unique_ids"]


@dataclass(frozen=True)
class SourceDef:
    """A catalog source: the pinned packages it reads and the parser that turns them into tools.

    ``parse`` receives one open ``Archive`` per package, in ``packages`` order. ``want`` lists the archive
    members a tarball parser needs (shell patterns), so large npm tarballs are not held in memory whole.
    """

    name: str
    packages: tuple[PackageSpec, ...]
    parse: Callable[[list[Archive]], list[Tool]]
    want: tuple[str, ...] = ("*",)
    note: str = ""


def provenance(archive: Archive, path: str | None = None) -> Provenance:
    return Provenance(
        package=archive.spec.name, version=archive.spec.version, license=archive.license(), path=path
    )


def auth_from_credentials(credentials: Sequence[str], text_hints: str = "") -> Auth:
    """Auth from the credential/env-var names a tool needs (never their values).

    OAuth client ids/secrets -> oauth2; user name + password -> basic; keys/tokens/secrets -> api_key.
    Without any credential: oauth2 when the code mentions OAuth credential files, ``unknown`` otherwise
    (the source does not say; an endpoint without auth information is then a metadata defect).
    """
    names = [c.upper() for c in credentials]
    first = credentials[0] if credentials else None
    hints = text_hints.lower()
    oauth_hint = "oauth" in hints or "credentials.json" in hints
    if any("OAUTH" in n or "CLIENT_SECRET" in n or "CLIENT_ID" in n for n in names):
        return Auth(type=AuthType.OAUTH2, credential=first)
    if oauth_hint and any("CREDENTIALS" in n for n in names):  # a credentials file for an OAuth flow
        return Auth(type=AuthType.OAUTH2, credential=first)
    if any("PASSWORD" in n for n in names) and any("USER" in n or "LOGIN" in n for n in names):
        return Auth(type=AuthType.BASIC, credential=first)
    if credentials:
        return Auth(type=AuthType.API_KEY, credential=first)
    if oauth_hint:
        return Auth(type=AuthType.OAUTH2)
    return Auth(type=AuthType.UNKNOWN)


def unique_ids(source: str, keys: Sequence[str], tiebreaks: Sequence[str] | None = None) -> list[str]:
    """``source:key`` ids; a key that repeats gets ``~tiebreak``, and any id still repeated ``~2``, ``~3``.

    Ids depend on each tool's own key and tie-break, not on catalog order, so they stay stable across runs
    and across package updates that add or drop other tools.
    """
    tb = list(tiebreaks) if tiebreaks is not None else [""] * len(keys)
    counts = Counter(keys)
    ids = [
        f"{source}:{k}" if counts[k] == 1 or not tb[i] else f"{source}:{k}~{tb[i]}"
        for i, k in enumerate(keys)
    ]
    repeated = Counter(ids)
    seen: Counter[str] = Counter()
    out = list(ids)
    for i in sorted(range(len(ids)), key=lambda i: (ids[i], tb[i], i)):
        if repeated[ids[i]] > 1:
            seen[ids[i]] += 1
            if seen[ids[i]] > 1:
                out[i] = f"{ids[i]}~{seen[ids[i]]}"
    return out
