"""Crawl reports: a JSON summary and a self-contained HTML page with plots.

:func:`build_report` folds the records a crawl leaves behind (fetch records, dedup
records, refusals) and a few counters into one JSON-safe dict; :func:`render_html`
turns that dict into a single HTML file with inline SVG charts — no scripts, no
network, so it opens anywhere and can be archived with the crawl.

Every chart is drawn from a list in the dict (``report["plots"]``), so tests check
the numbers, not pixels.
"""

from __future__ import annotations

import html
import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from crawlkit.records import refusal_reason
from crawlkit.recrawl.stats import html_section as recrawl_html
from crawlkit.streams import Record
from crawlkit.times import parse_time

__all__ = [
    "SECTIONS",
    "build_report",
    "format_number",
    "parse_time",
    "render_html",
    "settings_text",
]

GAP_BINS = [0.0, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600, math.inf]


def _host_of(record: Record) -> str:
    host = record.get("host")
    if isinstance(host, str) and host:
        return host
    url = str(record.get("url") or "")
    return url.split("/")[2] if url.count("/") >= 2 else "?"


def build_report(
    fetches: Iterable[Record],
    *,
    dedups: Iterable[Record] = (),
    refusals: Iterable[Record] = (),
    counters: dict[str, Any] | None = None,
    rate_bins: int = 60,
    top: int = 20,
    top_hosts: int = 500,
) -> dict[str, Any]:
    """Fold a crawl's records into the report dict (JSON-safe).

    ``counters`` carries numbers that are not in the records (the seen set's measured
    false-positive rate, queue sizes, the audit verdict) and is copied into the report.
    """
    outcomes: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    per_host: Counter[str] = Counter()
    hosts: defaultdict[str, Counter[str]] = defaultdict(Counter)  # the hosts table
    host_times: defaultdict[str, list[float]] = defaultdict(list)
    times: list[float] = []
    bytes_total = 0
    requests = 0  # records of a request made (robots-denied, deferred... made none)
    for rec in fetches:
        outcome = str(rec.get("outcome") or "unknown")
        outcomes[outcome] += 1
        requests += rec.get("fetched_at") is not None
        status = rec.get("status")
        statuses[str(status) if status is not None else "none"] += 1
        bytes_total += int(rec.get("bytes") or 0)
        row = hosts[_host_of(rec)]
        row["urls"] += 1
        row["bytes"] += int(rec.get("bytes") or 0)
        if outcome == "fetched" and isinstance(status, int) and status < 400:
            row["fetched"] += 1
        elif outcome == "error" or (isinstance(status, int) and status >= 400):
            row["errors"] += 1
        elif outcome not in ("fetched", "not-modified", "redirect"):
            row[outcome] += 1
        if outcome in ("fetched", "not-modified", "redirect", "error") and status is not None:
            host = _host_of(rec)
            per_host[host] += 1
            t = parse_time(rec.get("fetched_at"))
            if t is not None:
                times.append(t)
                host_times[host].append(t)

    gaps = Counter[int]()
    smallest_gap: float | None = None
    host_gap: dict[str, float] = {}
    for host, stamps in host_times.items():
        stamps.sort()
        for a, b in itertools.pairwise(stamps):
            gap = b - a
            smallest_gap = gap if smallest_gap is None else min(smallest_gap, gap)
            host_gap[host] = min(host_gap.get(host, gap), gap)
            for i in range(len(GAP_BINS) - 1):
                if GAP_BINS[i] <= gap < GAP_BINS[i + 1]:
                    gaps[i] += 1
                    break

    rate: list[dict[str, float]] = []
    if times:
        start, end = min(times), max(times)
        width = max((end - start) / rate_bins, 1e-9)
        counts = [0] * rate_bins
        for t in times:
            counts[min(int((t - start) / width), rate_bins - 1)] += 1
        rate = [
            {"t": round(i * width, 3), "per_s": round(c / width, 3)} for i, c in enumerate(counts)
        ]

    kinds: Counter[str] = Counter(str(r.get("kind") or "unknown") for r in dedups)
    reasons: Counter[str] = Counter(refusal_reason(r) for r in refusals)
    duration = (max(times) - min(times)) if len(times) > 1 else 0.0
    copies = kinds["exact"] + kinds["near"]
    pages = sum(kinds.values())
    return {
        "fetches": sum(outcomes.values()),
        "requests": requests,
        "outcomes": dict(outcomes.most_common()),
        "statuses": dict(statuses.most_common()),
        "bytes": bytes_total,
        "hosts": len(per_host),
        "duration_s": round(duration, 3),
        "fetch_rate_per_s": round(len(times) / duration, 3) if duration else None,
        "smallest_host_gap_s": None if smallest_gap is None else round(smallest_gap, 4),
        "dedup": {**dict(kinds), "copy_share": round(copies / pages, 4) if pages else 0.0},
        "refusals": dict(reasons.most_common()),
        "hosts_table": _hosts_table(hosts, host_gap, top_hosts),
        "counters": dict(counters or {}),
        "plots": {
            "fetch_rate": rate,
            "status_mix": [{"label": k, "value": v} for k, v in statuses.most_common()],
            "host_gaps": [
                {"label": _bin_label(i), "value": gaps[i]} for i in range(len(GAP_BINS) - 1)
            ],
            "top_hosts": [{"label": h, "value": n} for h, n in per_host.most_common(top)],
            "refusals": [{"label": k, "value": v} for k, v in reasons.most_common()],
            "dedup": [{"label": k, "value": v} for k, v in kinds.most_common()],
        },
    }


def _hosts_table(
    hosts: dict[str, Counter[str]], gaps: dict[str, float], limit: int
) -> list[dict[str, Any]]:
    """One row per host (Heritrix's hosts report), most URLs first, at most ``limit``:
    URLs answered, fetched (status below 400), errors (failed or 4xx/5xx), other
    outcomes (robots-denied, deferred, refused, ...), bytes, smallest gap between
    two requests."""
    rows = []
    for host, c in sorted(hosts.items(), key=lambda kv: (-kv[1]["urls"], kv[0]))[:limit]:
        other = {k: v for k, v in c.items() if k not in ("urls", "bytes", "fetched", "errors")}
        rows.append(
            {
                "host": host,
                "urls": c["urls"],
                "fetched": c["fetched"],
                "errors": c["errors"],
                "other": dict(sorted(other.items())),
                "bytes": c["bytes"],
                "smallest_gap_s": round(gaps[host], 4) if host in gaps else None,
            }
        )
    return rows


def _bin_label(i: int) -> str:
    lo, hi = GAP_BINS[i], GAP_BINS[i + 1]
    return f"≥{lo:g}s" if math.isinf(hi) else f"{lo:g}–{hi:g}s"


# --- HTML ---------------------------------------------------------------------------

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:980px;color:#222}
h1{font-size:1.6em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right}
th{text-align:left}td:first-child{text-align:left}.kpi{display:flex;gap:1.5em;flex-wrap:wrap}
.kpi div{background:#f4f6f8;padding:.6em 1em;border-radius:6px}.kpi b{display:block;font-size:1.3em}
svg text{font-size:11px;fill:#333}details{margin-top:2em}summary{font-weight:bold;cursor:pointer}
pre{background:#f4f6f8;padding:.6em 1em;white-space:pre-wrap}
"""


def _bar_chart(items: list[dict[str, Any]], title: str, width: int = 900) -> str:
    if not items:
        return f"<p>No data for {html.escape(title.lower())}.</p>"
    bar_h, gap, label_w = 18, 4, 230
    height = len(items) * (bar_h + gap) + 10
    top = max(float(i["value"]) for i in items) or 1.0
    rows = []
    for n, item in enumerate(items):
        y = 5 + n * (bar_h + gap)
        w = (width - label_w - 80) * float(item["value"]) / top
        rows.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">'
            f"{html.escape(str(item['label'])[:40])}</text>"
            f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="#4a78b5">'
            f"<title>{html.escape(str(item['label']))}: {item['value']}</title></rect>"
            f'<text x="{label_w + w + 5:.1f}" y="{y + 13}">{item["value"]}</text>'
        )
    return (
        f'<svg role="img" aria-label="{html.escape(title)}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg">{"".join(rows)}</svg>'
    )


def _line_chart(points: list[dict[str, float]], title: str, width: int = 900) -> str:
    if not points:
        return f"<p>No data for {html.escape(title.lower())}.</p>"
    height, pad = 220, 40
    xmax = max(p["t"] for p in points) or 1.0
    ymax = max(p["per_s"] for p in points) or 1.0
    coords = " ".join(
        f"{pad + (width - 2 * pad) * p['t'] / xmax:.1f},"
        f"{height - pad - (height - 2 * pad) * p['per_s'] / ymax:.1f}"
        for p in points
    )
    return (
        f'<svg role="img" aria-label="{html.escape(title)}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg">'
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
        f'stroke="#999"/><line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" '
        f'stroke="#999"/><polyline fill="none" stroke="#4a78b5" stroke-width="2" '
        f'points="{coords}"/><text x="{pad}" y="{pad - 8}">{ymax:.1f} pages/s</text>'
        f'<text x="{width - pad}" y="{height - pad + 18}" text-anchor="end">'
        f"{xmax:.0f} s</text></svg>"
    )


def format_number(value: Any) -> str:
    """A number as a person reads it: ``12,345``, ``0.0123``, ``< 0.000001`` (never
    ``8.62e-54``); anything else as ``str``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if value == 0:
        return "0"
    size = abs(value)
    if size < 1e-6:
        return ("-" if value < 0 else "") + "< 0.000001"
    if size >= 1000:
        return f"{value:,.0f}"
    if size >= 1:
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _table(head: list[str], rows: list[list[Any]]) -> str:
    cells = "".join(
        "<tr>" + "".join(f"<td>{html.escape(format_number(c))}</td>" for c in row) + "</tr>"
        for row in rows
    )
    heads = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table><tr>{heads}</tr>{cells}</table>\n"


def _with_examples(items: dict[str, Any]) -> list[list[Any]]:
    return [[k, v["count"], " ".join(v["examples"])] for k, v in items.items()]


def _verdict(audit: dict[str, Any] | None) -> str:
    if not audit:
        return "not run"
    if audit.get("ok"):
        return "polite: no violations"
    return f"{len(audit.get('violations') or [])} kinds of violation"


# --- sections: each takes the report and returns its HTML ("" to leave it out) --------


def glance_section(report: dict[str, Any]) -> str:
    """The at-a-glance header: pages, requisites, errors, time, politeness verdict."""
    c = report.get("collection") or {}
    pages = sum(m["count"] for m in c.get("mime_types", []) if m["type"] == "text/html")
    if not c:
        pages = sum(v for k, v in report.get("dedup", {}).items() if k != "copy_share")
    req = c.get("requisites") or {}
    errors = report["outcomes"].get("error", 0) + sum(
        n for code, n in report["statuses"].items() if code.isdigit() and int(code) >= 400
    )
    audit = c.get("audit")
    verdict = _verdict(audit)
    if not audit and "audit_violations" in report.get("counters", {}):
        n = report["counters"]["audit_violations"]
        verdict = "polite: no violations" if not n else f"{n} violations"
    kpis = [
        ("pages", format_number(pages)),
        (
            "requisites",
            f"{format_number(req.get('fetched', 0))} ({format_number(req.get('missing', 0))} "
            "missing)"
            if req
            else "—",
        ),
        ("errors", format_number(errors)),
        ("time", f"{report['duration_s']:.1f} s"),
        ("politeness", verdict),
        ("requests", format_number(report.get("requests", report["fetches"]))),
        ("hosts", format_number(report["hosts"])),
        ("bytes", f"{report['bytes'] / 1e6:.1f} MB"),
        ("rate", f"{report['fetch_rate_per_s'] or 0:.1f}/s"),
    ]
    cells = "".join(f"<div>{html.escape(k)}<b>{html.escape(v)}</b></div>" for k, v in kpis)
    return f"<div class=kpi>{cells}</div>\n"


def charts_section(report: dict[str, Any]) -> str:
    plots = report["plots"]
    charts = [
        ("Fetch rate over time", _line_chart(plots["fetch_rate"], "fetch rate")),
        ("Status mix", _bar_chart(plots["status_mix"], "status mix")),
        ("Gap between fetches of one host", _bar_chart(plots["host_gaps"], "host gaps")),
        ("Top hosts", _bar_chart(plots["top_hosts"], "top hosts")),
        ("Trap, scope and budget refusals", _bar_chart(plots["refusals"], "refusals")),
        ("Dedup", _bar_chart(plots["dedup"], "dedup")),
    ]
    return "".join(f"<h2>{html.escape(t)}</h2>\n{chart}\n" for t, chart in charts)


def seeds_section(report: dict[str, Any]) -> str:
    """Per seed (Heritrix's seeds report): status, outcome, where it led."""
    c = report.get("collection") or {}
    rows = c.get("seeds_table") or [
        {"seed": s, "status": "", "outcome": "", "pages": ""} for s in c.get("seeds", [])
    ]
    if not rows:
        return ""
    return "<h2>Seeds</h2>" + _table(
        ["seed", "status", "outcome", "redirect", "pages fetched on its host"],
        [
            [
                r["seed"],
                r.get("status") or "",
                r.get("outcome") or "",
                r.get("location") or "",
                r.get("pages", ""),
            ]
            for r in rows
        ],
    )


def hosts_section(report: dict[str, Any]) -> str:
    """Per host (Heritrix's hosts report)."""
    rows = report.get("hosts_table") or []
    if not rows:
        return ""
    more = report["hosts"] - len(rows)
    return (
        "<h2>Hosts</h2>"
        + _table(
            ["host", "URLs", "fetched", "errors", "other", "bytes", "smallest gap (s)"],
            [
                [
                    r["host"],
                    r["urls"],
                    r["fetched"],
                    r["errors"],
                    ", ".join(f"{k} {v}" for k, v in r["other"].items()),
                    r["bytes"],
                    "" if r["smallest_gap_s"] is None else r["smallest_gap_s"],
                ]
                for r in rows
            ],
        )
        + (f"<p>and {format_number(more)} more hosts (see report.json)</p>" if more > 0 else "")
    )


def contents_section(report: dict[str, Any]) -> str:
    """Content types, status codes, errors and refusals, requisites missing."""
    c = report.get("collection") or {}
    if not c:
        return ""
    req = c.get("requisites") or {}
    return "\n".join(
        [
            "<h2>Content types</h2>"
            + _table(
                ["type", "responses", "bytes"],
                [[m["type"], m["count"], m["bytes"]] for m in c.get("mime_types", [])],
            ),
            "<h2>Status codes</h2>"
            + _table(["status", "count", "examples"], _with_examples(c.get("statuses", {}))),
            "<h2>Errors and refusals</h2>"
            + _table(["reason", "count", "examples"], _with_examples(c.get("problems", {}))),
            f"<h2>Page requisites: {format_number(req.get('fetched', 0))} fetched, "
            f"{format_number(req.get('missing', 0))} missing</h2>"
            + _table(
                ["missing", "why", "needed by"],
                [
                    [m["url"], m["why"], m.get("from") or ""]
                    for m in req.get("missing_examples", [])
                ],
            ),
        ]
    )


def _new_warcs(files: list[dict[str, Any]]) -> str:
    if not files:
        return ""
    return (
        "<p>Not yet in the collection, in new/ (being written, or left there by a stop:"
        " the next run of the crawl cuts an open one back to its last whole record,"
        " closes it and moves it in):</p>"
        + _table(
            ["file", "bytes", "state"],
            [[w["name"], w["bytes"], "open" if w["open"] else "closed"] for w in files],
        )
    )


def files_section(report: dict[str, Any]) -> str:
    """The WARC files with their hashes, the index, robots exceptions."""
    c = report.get("collection") or {}
    if not c:
        return ""
    out = (
        f"<h2>WARC files ({format_number(c.get('warc_bytes', 0))} bytes)</h2>"
        + _table(
            ["file", "bytes", "SHA-256"],
            [[w["name"], w["bytes"], w["sha256"]] for w in c.get("warc_files", [])],
        )
        + _new_warcs(c.get("warc_new_files") or [])
        + (f"<p>CDXJ index: {html.escape(str(c['index']))}</p>" if c.get("index") else "")
    )
    if c.get("robots_ignored_for"):
        out += "<h2>robots.txt rules not applied (--ignore-robots-for)</h2>" + _table(
            ["host"], [[h] for h in c["robots_ignored_for"]]
        )
    return out


def audit_section(report: dict[str, Any]) -> str:
    c = report.get("collection") or {}
    audit = c.get("audit")
    if not c:
        return ""
    head = f"<h2>Politeness audit of the crawl's own fetch log: {html.escape(_verdict(audit))}</h2>"
    if not audit or not audit.get("violations"):
        return head
    return head + _table(
        ["check", "where", "count", "examples"],
        [
            [v["check"], v.get("host") or v.get("addr"), v["count"], "; ".join(v["examples"][:3])]
            for v in audit.get("violations", [])
        ],
    )


def settings_text(settings: dict[str, Any], prefix: str = "") -> list[str]:
    """Settings as lines people read (``fetch.min_delay = 1``, lists joined by
    commas, none for None), nested sections flattened, keys sorted."""
    lines: list[str] = []
    for key, value in sorted(settings.items()):
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            lines += settings_text(value, f"{name}.")
        elif isinstance(value, list | tuple):
            lines.append(f"{name} = {_listed(value) or '(none)'}")
        elif value is None:
            lines.append(f"{name} = (none)")
        elif isinstance(value, bool):
            lines.append(f"{name} = {'yes' if value else 'no'}")
        elif isinstance(value, dict):
            lines.append(f"{name} = (none)")
        else:
            lines.append(f"{name} = {format_number(value)}")
    return lines


def _listed(values: list[Any] | tuple[Any, ...]) -> str:
    """A list as words: ``a, b``; a list inside one in parentheses: ``(a, b), c``."""
    return ", ".join(
        f"({_listed(v)})" if isinstance(v, list | tuple) else format_number(v) for v in values
    )


def settings_section(report: dict[str, Any]) -> str:
    """The last run's settings as text, collapsed."""
    settings = (report.get("collection") or {}).get("settings") or {}
    if not settings:
        return ""
    text = "\n".join(settings_text(settings))
    return (
        "<details><summary>Settings (the last run's, defaults included)</summary>"
        f"<pre>{html.escape(text)}</pre></details>\n"
    )


def counters_section(report: dict[str, Any]) -> str:
    """The crawl's internal counters (seen set, Bloom filter, queues), collapsed."""
    counters = report.get("counters") or {}
    if not counters:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(format_number(v))}</td></tr>"
        for k, v in sorted(counters.items())
    )
    return (
        "<details><summary>Crawl internals (seen set, Bloom filter, queues)</summary>"
        f"<table>{rows}</table></details>\n"
    )


def recrawl_section(report: dict[str, Any]) -> str:
    """Estimated change rates, expected freshness and URLs due per day ahead; empty
    for a crawl with no recrawl history yet."""
    return recrawl_html(report.get("recrawl"))


# The page, top to bottom. Another section (a recrawl summary, ...) is one function
# of the report dict added here.
SECTIONS: list[Callable[[dict[str, Any]], str]] = [
    glance_section,
    charts_section,
    seeds_section,
    hosts_section,
    contents_section,
    files_section,
    audit_section,
    recrawl_section,
    settings_section,
    counters_section,
]


def render_html(report: dict[str, Any], title: str = "crawlkit crawl report") -> str:
    """One self-contained HTML page (inline CSS and SVG, no scripts): the sections of
    :data:`SECTIONS` in order, at a glance first, charts before tables, settings and
    internal counters collapsed at the end."""
    body = "".join(section(report) for section in SECTIONS)
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>\n{body}</body></html>\n"
    )
