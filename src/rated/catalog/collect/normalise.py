"""Text and identifier normalisation shared by the collectors (markup stripped, ids and providers stable).

>>> clean_text('Get a <a href="https://x.io">list</a> &amp; more\\n\\n  items')
'Get a list & more items'
>>> slug("Google Sheets: Append/Update Row")
'google_sheets_append_update_row'
>>> slug("S3ReaderTool")
's3_reader_tool'
>>> provider_from_url("https://api.github.com/repos/{owner}")
'github.com'
>>> integration_key("GmailToolSpec")
'gmail'
"""

from __future__ import annotations

import html
import inspect
import re
from urllib.parse import urlsplit

from rated.catalog.text import split_camel

__all__ = [
    "clean_docstring",
    "clean_text",
    "integration_key",
    "provider_from_url",
    "registrable_domain",
    "slug",
]

_TAG = re.compile(r"<[^>]+>")
_MD_LINK = re.compile(r"\[([^\]]+)\]\((?:[^)\s]+)\)")
_SPACE = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_ID_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")  # keeps S3, E2B, DB2 whole
_DOC_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Yields|Raises|Examples?|Example usage|Usage|Attributes)"
    r"\s*:?\s*$",
    re.I,
)
# second-level labels under which registries sell names (example.co.uk -> three labels)
_SECOND_LEVEL = frozenset({"co", "com", "net", "org", "gov", "ac", "edu"})
# words that name the kind of wrapper, not the service: dropped from integration keys
_WRAPPER_WORDS = ("toolspec", "toolkit", "tools", "tool", "oauth2api", "oauth2", "api", "apis", "node")


def clean_text(text: str | None) -> str:
    """Plain one-line text: HTML tags and entities and Markdown links removed, whitespace collapsed."""
    if not text:
        return ""
    text = _MD_LINK.sub(r"\1", str(text))
    text = html.unescape(_TAG.sub(" ", text))
    return _SPACE.sub(" ", text).strip()


def clean_docstring(doc: str | None) -> str:
    """The prose of a docstring: the paragraphs before its Args/Returns/Examples sections, on one line."""
    if not doc:
        return ""
    kept: list[str] = []
    for line in inspect.cleandoc(doc).splitlines():
        if _DOC_SECTION.match(line):
            break
        kept.append(line)
    return clean_text(" ".join(kept))


def slug(text: str) -> str:
    """Lower-case words joined by ``_`` (camelCase split first, digits kept with their word); for ids."""
    return _NON_WORD.sub("_", _ID_CAMEL.sub("_", text).lower()).strip("_")


def registrable_domain(host: str) -> str:
    """``api.eu.example.co.uk`` -> ``example.co.uk``; IPs and single labels are returned unchanged."""
    host = host.lower().strip(".")
    labels = host.split(".")
    if len(labels) <= 2 or all(part.isdigit() for part in labels):
        return host
    keep = 3 if labels[-2] in _SECOND_LEVEL and len(labels[-1]) == 2 else 2
    return ".".join(labels[-keep:])


def provider_from_url(url: str | None) -> str | None:
    """The registrable domain of an http(s) URL (templated hosts give None)."""
    if not url:
        return None
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    if not host or "{" in host or "." not in host:
        return None
    return registrable_domain(host)


def integration_key(name: str) -> str:
    """The service a tool wraps, as a bare key (``SlackToolSpec``, ``slack_tool``, ``slackApi`` -> ``slack``).

    Used to compare listings across platforms; not an id.
    """
    key = _NON_WORD.sub("", split_camel(name).lower())
    changed = True
    while changed and key:
        changed = False
        for word in _WRAPPER_WORDS:
            if key.endswith(word) and len(key) > len(word):
                key = key[: -len(word)]
                changed = True
    return key
