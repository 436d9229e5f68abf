"""The query-writing prompt (the paper's Figure 2, as its text describes it) and a tolerant answer parser.

The paper gives the LLM a tool's name, description and metadata and asks for 10 to 20 task-oriented
queries of 5 to 120 words with mixed intents, written as a user would talk, without copying the
description. The figure itself is not in our copy of the paper; ``PROMPT_VERSION`` names this wording so a
pairs file records which prompt produced it.

Small models answer in many shapes (numbered lists, bullets, JSON, JSON inside a code fence, a chatty
preamble), so ``parse_queries`` accepts all of them and drops what is clearly not a query.

>>> parse_queries('Here are some queries:\\n1. Find me a cheap flight to Rome\\n2) "What is the weather?"')
['Find me a cheap flight to Rome', 'What is the weather?']
>>> parse_queries('```json\\n{"queries": ["book a table for two tonight"]}\\n```')
['book a table for two tonight']
"""

from __future__ import annotations

import json
import re
from typing import Any

from rated.catalog.schema import Tool
from rated.catalog.text import normalise_space, parameter_items, split_identifier

__all__ = ["PROMPT_VERSION", "SYSTEM_PROMPT", "build_messages", "describe_tool", "parse_queries"]

PROMPT_VERSION = "rated-syn-v1"

SYSTEM_PROMPT = (
    "You write realistic requests that people send to an AI assistant that can call tools. "
    "You answer with a numbered list only."
)

USER_TEMPLATE = """Tool name: {name}
Description: {description}
{metadata}
Write {n} different requests that a user could send to an AI assistant when this tool is the right one to use.
Rules:
- Each request is between 5 and 120 words.
- Mix intents: direct commands, questions, goals with several steps, requests with concrete details \
(names, places, dates, amounts), and casual chat.
- Write like a real user talking to an assistant, in the first person. Users rarely know the tool's name.
- Do not copy sentences from the description; say it in your own words.
- Every request must be something this tool can do.
Answer with a numbered list, one request per line, and nothing else."""

_MAX_DESCRIPTION_CHARS = 800
_MAX_PARAMETERS = 10


def describe_tool(tool: Tool) -> dict[str, str]:
    """The name, description and metadata lines shown to the LLM (bounded, identifiers split into words)."""
    lines: list[str] = []
    params = parameter_items(tool.parameters)[:_MAX_PARAMETERS]
    if params:
        shown = [
            split_identifier(name) + (f" ({normalise_space(desc)[:120]})" if desc else "")
            for name, desc in params
        ]
        lines.append("Parameters: " + "; ".join(shown))
    if tool.tags:
        lines.append("Tags: " + ", ".join(tool.tags[:10]))
    if tool.provider:
        lines.append(f"Provider: {tool.provider}")
    if tool.source and tool.source != "custom":
        lines.append(f"Platform: {tool.source}")
    description = normalise_space(tool.description)[:_MAX_DESCRIPTION_CHARS] or "(none given)"
    return {
        "name": f"{tool.name} ({split_identifier(tool.name)})"
        if split_identifier(tool.name) != tool.name
        else tool.name,
        "description": description,
        "metadata": "\n".join(lines) + ("\n" if lines else ""),
    }


def build_messages(tool: Tool, n_queries: int) -> list[dict[str, str]]:
    """Chat messages (system + user) asking for ``n_queries`` queries about ``tool``."""
    if n_queries < 1:
        raise ValueError(f"n_queries must be at least 1, got {n_queries}")
    user = USER_TEMPLATE.format(n=n_queries, **describe_tool(tool))
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_ITEM = re.compile(
    r"^\s*(?:(?:query|request|q)\s*)?(?:\d{1,3}\s*[.):\]-]|[-*\u2022])\s*(?:(?:query|request)\s*:)?\s*(.+)$",
    re.I,
)
# when an answer numbers its items, bullets under them are details, not queries
_NUMBERED = re.compile(
    r"^\s*(?:(?:query|request|q)\s*)?\d{1,3}\s*[.):\]-]\s*(?:(?:query|request)\s*:)?\s*(.+)$", re.I
)
_QUOTES = "\"'\u201c\u201d\u2018\u2019`"
_LABEL = re.compile(r"^(?:query|request|user|q)\s*\d*\s*:\s*", re.I)


def _from_json(obj: Any) -> list[str] | None:
    if isinstance(obj, list):
        out = []
        for item in obj:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict):
                text = next(
                    (v for k, v in item.items() if k in ("query", "request", "text") and isinstance(v, str)),
                    None,
                )
                if text:
                    out.append(text)
        return out
    if isinstance(obj, dict):
        for key in ("queries", "requests", "items", "data"):
            if key in obj:
                return _from_json(obj[key])
    return None


def _try_json(text: str) -> list[str] | None:
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        cand = cand.strip()
        for start, end in (("[", "]"), ("{", "}")):
            i, j = cand.find(start), cand.rfind(end)
            if i == -1 or j <= i:
                continue
            try:
                found = _from_json(json.loads(cand[i : j + 1]))
            except json.JSONDecodeError:
                continue
            if found:
                return found
    return None


def _clean(text: str) -> str:
    text = normalise_space(text)
    text = _LABEL.sub("", text)
    text = text.strip().strip(_QUOTES).strip()
    if text.startswith("**") and text.endswith("**"):
        text = text[2:-2].strip()
    return text


def parse_queries(text: str) -> list[str]:
    """Extract query strings from an LLM answer: JSON (plain or fenced), numbered or bulleted lists, lines.

    Preamble and closing lines ("Here are ...:", "I hope this helps") are dropped when the answer has list
    items (numbered ones win over bullets, which are then sub-points); otherwise every non-empty line is a
    candidate. Order is kept; exact repeats are removed.
    """
    found = _try_json(text)
    if found is None:
        body = _FENCE.sub(lambda m: m.group(1), text)
        lines = [ln for ln in body.splitlines() if ln.strip()]
        numbered = [m.group(1) for ln in lines if (m := _NUMBERED.match(ln))]
        items = numbered or [m.group(1) for ln in lines if (m := _ITEM.match(ln))]
        found = items if items else [ln for ln in lines if not ln.rstrip().endswith(":")]
    out: list[str] = []
    seen: set[str] = set()
    for raw in found:
        query = _clean(raw)
        key = query.lower()
        if query and key not in seen:
            seen.add(key)
            out.append(query)
    return out
