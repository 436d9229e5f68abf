"""The dashboard page: one self-contained HTML document (inline CSS, no script, no external asset).

Every string that comes from a catalog, a client or the store goes through ``_e`` (HTML-escaped, quotes
included): tool ids and names are user input and may well contain markup.
"""

from __future__ import annotations

import html
import math
from datetime import UTC, datetime
from urllib.parse import urlencode

from rated.service.dashboard.chart import COLORS
from rated.service.dashboard.snapshot import MAX_TOOL_ROWS, Snapshot, ToolRow
from rated.store.base import OutcomeRecord
from rated.store.stats import outcome_class

__all__ = ["ago", "render_page"]

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;
color:#1c1f23}
main{max-width:1240px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:20px;margin:0 0 6px}h2{font-size:16px;margin:22px 0 8px}
.summary{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:10px 14px}
.summary b{font-size:15px}.muted{color:#5f6b7a}.bad{color:#b71c1c;font-weight:600}
.sep{color:#b0b8c2;margin:0 6px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde1e6}
th,td{padding:4px 8px;border-bottom:1px solid #eceff2;text-align:left;vertical-align:middle}
th{background:#eef1f4;font-weight:600;white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.id{font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all;max-width:420px}
tr.unhealthy{background:#fdecea}
.badge{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;font-weight:600;color:#fff}
.bar{display:inline-block;width:80px;height:9px;background:#e3e7eb;border-radius:2px;vertical-align:middle}
.bar i{display:block;height:100%;border-radius:2px}
.kind{font-weight:600}
img{width:100%;max-width:1200px;background:#fff;border:1px solid #dde1e6;border-radius:6px}
footer{margin-top:18px;font-size:12px}
"""


def render_page(snap: Snapshot, *, refresh: int, chart_url: str) -> str:
    """The page for ``snap``; reloads itself every ``refresh`` seconds (0: never)."""
    meta_refresh = f'<meta http-equiv="refresh" content="{refresh}">' if refresh else ""
    every = f"refreshes every {refresh} s" if refresh else "auto-refresh off"
    chart = f"{chart_url}?{urlencode({'minutes': snap.minutes})}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">{meta_refresh}
<title>rated: {snap.unhealthy} unhealthy of {snap.tools_indexed} tools</title>
<style>{_CSS}</style></head>
<body><main>
<h1>rated dashboard</h1>
{_summary(snap)}
<h2>Outcomes over time</h2>
<img src="{_e(chart)}" alt="outcomes per minute, stacked by kind" width="1000" height="300">
<h2>Tools with state <span class="muted">(unhealthy first, then most recently active)</span></h2>
{_tools_table(snap)}
<h2>Recent outcomes <span class="muted">(newest first)</span></h2>
{_outcomes_table(snap)}
<footer class="muted">rated {_e(snap.version)} &middot; generated {_e(_stamp(snap.now))} UTC &middot; {every}
(<code>?refresh=N</code>, 0 turns it off) &middot; counts and streaks come from the newest
{snap.records_read:,} outcome records{" (the log holds more)" if snap.capped else ""}</footer>
</main></body></html>
"""


def _summary(s: Snapshot) -> str:
    unhealthy = f'<b class="bad">{s.unhealthy:,}</b>' if s.unhealthy else "<b>0</b>"
    plus = "" if s.window_complete else "+"
    if s.window_outcomes:
        share = f"{s.window_failures / s.window_outcomes:.1%} failed"
        share = f'<span class="bad">{share}</span>' if s.window_failures else share
    else:
        share = "none reported"
    sep = '<span class="sep">|</span>'
    return (
        f'<div class="summary"><b>{s.tools_indexed:,}</b> tools indexed{sep}{unhealthy} unhealthy now{sep}'
        f"<b>{s.window_outcomes:,}{plus}</b> outcomes in the last {s.minutes} min ({share}){sep}"
        f"policy <b>{_e(s.policy)}</b>{sep}encoder <b>{_e(s.encoder)}</b>{sep}"
        f"db <code>{_e(s.db)}</code></div>"
    )


def _tools_table(s: Snapshot) -> str:
    if not s.rows:
        return '<p class="muted">No tool has state yet: all are healthy and none reported outcomes.</p>'
    head = "".join(f"<th>{_e(n)}</th>" for n in s.bars)
    body = "".join(_tool_row(r, s) for r in s.rows)
    more = (
        f'<p class="muted">{s.hidden_rows:,} more tools with state not shown (the page lists '
        f"{MAX_TOOL_ROWS}); <code>GET /tools</code> has them all.</p>"
        if s.hidden_rows
        else ""
    )
    return (
        f"<table><thead><tr><th>status</th><th>tool</th>{head}<th>last outcome</th><th>failing since</th>"
        f'<th class="num">calls</th><th class="num">failures</th><th class="num">caller errors</th>'
        f'<th title="{_e(_RETIRED_HELP)}">retired endpoint?</th></tr>'
        f"</thead><tbody>{body}</tbody></table>{more}"
    )


def _tool_row(r: ToolRow, s: Snapshot) -> str:
    status = (
        '<span class="badge" style="background:#2e7d32">healthy</span>'
        if r.healthy
        else '<span class="badge" style="background:#c62828">UNHEALTHY</span>'
    )
    name = "" if r.name == r.id else f'<br><span class="muted">{_e(r.name)}</span>'
    bars = "".join(f"<td>{_bar(r.bars.get(n))}</td>" for n in s.bars)
    st = r.stats
    if st is not None and st.last_outcome is not None and st.last_time is not None:
        last = f"{_kind(st.last_outcome)} {_ago_span(s.now, st.last_time)}"
    else:
        last = '<span class="muted">none in the records read</span>'
    if r.failing_since is None:
        since = ""
    else:
        since = ("" if r.since_exact else "&ge; ") + _ago_span(s.now, r.failing_since)
    calls = 0 if st is None else st.successes + st.failures + st.caller_errors
    fails = 0 if st is None else st.failures
    callers = 0 if st is None else st.caller_errors
    cls = "" if r.healthy else ' class="unhealthy"'
    return (
        f'<tr{cls}><td>{status}</td><td class="id">{_e(r.id)}{name}</td>{bars}<td>{last}</td>'
        f'<td>{since}</td><td class="num">{calls:,}</td><td class="num">{fails:,}</td>'
        f'<td class="num">{callers:,}</td><td>{_retired(r)}</td></tr>'
    )


_RETIRED_HELP = (
    "404/410 caller errors from different queries since the tool's last success, of how many the rule "
    "needs (rated.retired); yes: each further 404/410 counts as tool_error until a call succeeds"
)


def _retired(r: ToolRow) -> str:
    """The retired-endpoint rule's view: ``yes 3/3`` (different queries / how many it needs), ``no 1/3``,
    or nothing (no run); the rule's own words in the title."""
    st = r.retired
    if st is None:
        return ""
    of = f"{st.queries}/{'-' if st.need is None else st.need} queries"
    verdict = '<span class="bad">yes</span>' if st.holds else "no"
    return f'<span title="{_e(st.describe())}">{verdict} <span class="muted">{_e(of)}</span></span>'


def _outcomes_table(s: Snapshot) -> str:
    if not s.recent:
        return '<p class="muted">No outcomes reported yet (agents report them with POST /feedback).</p>'
    rows = "".join(_outcome_row(r, s.now) for r in s.recent)
    return (
        "<table><thead><tr><th>time (UTC)</th><th>ago</th><th>tool</th><th>outcome</th>"
        f'<th class="num">retry-after</th></tr></thead><tbody>{rows}</tbody></table>'
    )


def _outcome_row(r: OutcomeRecord, now: float) -> str:
    retry = "" if r.retry_after is None else f"{r.retry_after:g} s"
    return (
        f'<tr><td title="{_e(_stamp(r.time))}">{_e(_stamp(r.time, short=True))}</td>'
        f'<td class="muted">{_e(ago(now - r.time))}</td><td class="id">{_e(r.tool_id)}</td>'
        f'<td>{_kind(r.outcome)}</td><td class="num">{_e(retry)}</td></tr>'
    )


def ago(seconds: float) -> str:
    """A short human duration: ``42 s``, ``5 min``, ``3 h 20 min``, ``2 d 4 h`` (0 for clock skew)."""
    s = max(int(seconds), 0) if math.isfinite(seconds) else 0
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86_400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86_400} d {s % 86_400 // 3600} h"


def _ago_span(now: float, when: float) -> str:
    return f'<span class="muted" title="{_e(_stamp(when))} UTC">{_e(ago(now - when))} ago</span>'


def _bar(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return '<span class="muted">-</span>'
    frac = min(max(value, 0.0), 1.0)
    color = "#2e7d32" if frac >= 0.8 else "#ef6c00" if frac >= 0.5 else "#c62828"
    return (
        f'<span class="bar" title="{value:.3f}"><i style="width:{frac * 100:.0f}%;background:{color}"></i>'
        f'</span> <span class="muted">{value:.2f}</span>'
    )


def _kind(name: str) -> str:
    color = COLORS.get(name, COLORS["other"])
    weight = "" if outcome_class(name) == "success" else ";font-weight:700"
    return f'<span class="kind" style="color:{color}{weight}">{_e(name)}</span>'


def _stamp(t: float, *, short: bool = False) -> str:
    try:
        when = datetime.fromtimestamp(t, UTC)
    except (OverflowError, OSError, ValueError):
        return "?"
    return when.strftime("%H:%M:%S" if short else "%Y-%m-%d %H:%M:%S")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
