"""``build_catalog``: fetch, parse, merge, deduplicate and score every source; one failing source fails alone.

Each source runs in isolation: a registry that does not answer, a corrupt archive or a changed package layout
becomes that source's error (``SourceReport.error``) and the others go on. When a previous catalog is passed
(``previous``), tools of sources that were not rebuilt, or whose rebuild failed, are carried over from it,
so ``--sources n8n`` refreshes one platform without dropping or duplicating the rest.

Every tool gets ``extra["prior"]`` (the static reliability prior components and the reliable flag) and
``extra["defects"]`` (metadata defect codes); the fitted prior statistics go into the build report so tools
added later can be scored on the same scale (``rated.catalog.prior.score_new``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rated.catalog.collect import crewai, langchain, llamaindex, n8n, public_apis
from rated.catalog.collect.archive import Archive
from rated.catalog.collect.base import SourceDef
from rated.catalog.collect.dedup import dedupe
from rated.catalog.collect.fetch import Fetcher
from rated.catalog.defects import find_defects
from rated.catalog.prior import PriorStats, compute_prior
from rated.catalog.schema import Tool
from rated.encode.base import Encoder
from rated.errors import ConfigError, RatedError

__all__ = ["SOURCES", "BuildResult", "SourceReport", "annotate", "build_catalog"]

SOURCES: dict[str, SourceDef] = {
    s.name: s for s in (n8n.SOURCE, langchain.SOURCE, crewai.SOURCE, llamaindex.SOURCE, public_apis.SOURCE)
}

Step = Callable[[str, str], None]  # (stage or source name, message)


@dataclass
class SourceReport:
    name: str
    ok: bool
    tools: int = 0
    error: str | None = None
    packages: list[str] = field(default_factory=list)
    licenses: list[str] = field(default_factory=list)
    seconds: float = 0.0
    carried_over: int = 0  # tools kept from the previous catalog (source not rebuilt, or its rebuild failed)
    note: str = ""


@dataclass
class BuildResult:
    tools: list[Tool]
    reports: list[SourceReport]
    exact_duplicates: int = 0
    groups: int = 0
    grouped: int = 0
    prior_stats: PriorStats | None = None
    encoder: str | None = None

    @property
    def failed(self) -> list[SourceReport]:
        return [r for r in self.reports if not r.ok]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tools": len(self.tools),
            "exact_duplicates_removed": self.exact_duplicates,
            "near_duplicate_groups": self.groups,
            "tools_in_groups": self.grouped,
            "encoder": self.encoder,
            "prior_stats": self.prior_stats.to_dict() if self.prior_stats else None,
            "sources": [vars(r) for r in self.reports],
        }


def build_catalog(
    sources: Sequence[str] | None = None,
    cache: str | Path | None = None,
    *,
    encoder: Encoder | None = None,
    fetcher: Fetcher | None = None,
    previous: Sequence[Tool] | None = None,
    on_step: Step | None = None,
    progress: bool = False,
) -> BuildResult:
    """Build the catalog from ``sources`` (default: all, in ``SOURCES`` order).

    ``encoder`` scores the static prior (without one, tools get defects but no prior). ``fetcher`` defaults to
    one over ``cache`` (``rated_home()/cache/packages``).
    """
    names = list(sources) if sources else list(SOURCES)
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        raise ConfigError(f"unknown source(s) {', '.join(unknown)}; choose from {', '.join(SOURCES)}")
    fetcher = fetcher or Fetcher(cache)
    step = on_step or (lambda _stage, _msg: None)
    collected: dict[str, list[Tool]] = {}
    reports: list[SourceReport] = []
    old_by_source: dict[str, list[Tool]] = {}
    for tool in previous or ():
        old_by_source.setdefault(tool.source, []).append(_strip(tool))
    for name in SOURCES:
        if name not in names:
            if name in old_by_source:
                collected[name] = old_by_source[name]
                reports.append(
                    SourceReport(
                        name,
                        ok=True,
                        tools=len(collected[name]),
                        carried_over=len(collected[name]),
                        note="not rebuilt: kept from the previous catalog",
                    )
                )
            continue
        report, tools = _run_source(SOURCES[name], fetcher, step)
        if report.ok:
            collected[name] = tools
        elif name in old_by_source:
            collected[name] = old_by_source[name]
            report.carried_over = len(collected[name])
            report.note = "rebuild failed: kept the previous catalog's tools"
        reports.append(report)
    merged = [t for name in SOURCES for t in sorted(collected.get(name, []), key=lambda t: t.id)]
    step("dedupe", f"deduplicating {len(merged)} tools")
    dd = dedupe(merged)
    result = BuildResult(
        tools=dd.tools, reports=reports, exact_duplicates=dd.removed, groups=dd.groups, grouped=dd.grouped
    )
    if result.tools:
        step("prior", f"scoring the reliability prior of {len(result.tools)} tools")
        result.tools, stats = annotate(result.tools, encoder, progress=progress)
        result.prior_stats = stats
        result.encoder = getattr(encoder, "name", type(encoder).__name__) if encoder is not None else None
    for report in reports:
        report.tools = sum(1 for t in result.tools if t.source == report.name)
    return result


def _run_source(source: SourceDef, fetcher: Fetcher, step: Step) -> tuple[SourceReport, list[Tool]]:
    report = SourceReport(source.name, ok=False, packages=[str(p) for p in source.packages], note=source.note)
    started = time.perf_counter()
    archives: list[Archive] = []
    tools: list[Tool] = []
    try:
        for i, spec in enumerate(source.packages, 1):
            step(source.name, f"fetching {spec} ({i}/{len(source.packages)})")
            archives.append(Archive(fetcher.fetch(spec), spec, want=source.want))
        step(source.name, "parsing")
        tools = source.parse(archives)
        report.licenses = sorted({lic for a in archives if (lic := a.license())})
    except RatedError as exc:
        report.error = str(exc)
    except Exception as exc:  # a parser meeting a layout it does not know: this source fails, not the build
        report.error = f"{type(exc).__name__}: {exc} (has the package layout changed?)"
    else:
        report.ok = True
        report.tools = len(tools)
    finally:
        for a in archives:
            a.close()
        report.seconds = round(time.perf_counter() - started, 2)
    step(source.name, f"{report.tools} tools" if report.ok else f"failed: {report.error}")
    return report, tools


def annotate(
    tools: Sequence[Tool], encoder: Encoder | None, *, progress: bool = False
) -> tuple[list[Tool], PriorStats | None]:
    """Set ``extra["prior"]`` (when an encoder is given) and ``extra["defects"]`` on every tool."""
    prior = compute_prior(tools, encoder, progress=progress) if encoder is not None else None
    defects = find_defects(tools, prior.r_cons if prior is not None else None)
    out = []
    for i, tool in enumerate(tools):
        extra = {k: v for k, v in tool.extra.items() if k not in {"prior", "defects"}}
        if prior is not None:
            extra["prior"] = prior.record(i)
        extra["defects"] = list(defects[i])
        out.append(tool.model_copy(update={"extra": extra}))
    return out, prior.stats if prior is not None else None


def _strip(tool: Tool) -> Tool:
    """A tool from a previous catalog without the annotations and group this build recomputes."""
    extra = {k: v for k, v in tool.extra.items() if k not in {"prior", "defects", "duplicates"}}
    return tool.model_copy(update={"extra": extra, "group": None})
