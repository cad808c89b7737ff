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
from collections.abc import Iterable
from typing import Any

from crawlkit.io import Record
from crawlkit.records import refusal_reason
from crawlkit.times import parse_time

__all__ = ["build_report", "format_number", "parse_time", "render_html"]

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
) -> dict[str, Any]:
    """Fold a crawl's records into the report dict (JSON-safe).

    ``counters`` carries numbers that are not in the records (the seen set's measured
    false-positive rate, queue sizes, the audit verdict) and is copied into the report.
    """
    outcomes: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    per_host: Counter[str] = Counter()
    host_times: defaultdict[str, list[float]] = defaultdict(list)
    times: list[float] = []
    bytes_total = 0
    for rec in fetches:
        outcome = str(rec.get("outcome") or "unknown")
        outcomes[outcome] += 1
        status = rec.get("status")
        statuses[str(status) if status is not None else "none"] += 1
        bytes_total += int(rec.get("bytes") or 0)
        if outcome in ("fetched", "not-modified", "redirect", "error") and status is not None:
            host = _host_of(rec)
            per_host[host] += 1
            t = parse_time(rec.get("fetched_at"))
            if t is not None:
                times.append(t)
                host_times[host].append(t)

    gaps = Counter[int]()
    smallest_gap: float | None = None
    for stamps in host_times.values():
        stamps.sort()
        for a, b in itertools.pairwise(stamps):
            gap = b - a
            smallest_gap = gap if smallest_gap is None else min(smallest_gap, gap)
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
        "outcomes": dict(outcomes.most_common()),
        "statuses": dict(statuses.most_common()),
        "bytes": bytes_total,
        "hosts": len(per_host),
        "duration_s": round(duration, 3),
        "fetch_rate_per_s": round(len(times) / duration, 3) if duration else None,
        "smallest_host_gap_s": None if smallest_gap is None else round(smallest_gap, 4),
        "dedup": {**dict(kinds), "copy_share": round(copies / pages, 4) if pages else 0.0},
        "refusals": dict(reasons.most_common()),
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
svg text{font-size:11px;fill:#333}
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


def _collection_html(c: dict[str, Any]) -> str:
    """The archivist's sections: seeds, settings, contents, problems, files, audit."""
    audit = c.get("audit") or {}
    verdict = (
        "not run"
        if not audit
        else ("ok: no violations" if audit.get("ok") else f"{len(audit['violations'])} violations")
    )
    settings = c.get("settings") or {}
    flat: list[list[Any]] = []
    for key, value in sorted(settings.items()):
        if isinstance(value, dict):
            flat += [[f"{key}.{k}", str(v)] for k, v in sorted(value.items())]
        else:
            flat.append([key, str(value)])
    req = c.get("requisites") or {}
    parts = [
        "<h2>Seeds</h2>" + _table(["seed"], [[s] for s in c.get("seeds", [])]),
        "<h2>robots.txt rules not applied (--ignore-robots-for)</h2>"
        + _table(["host"], [[h] for h in c.get("robots_ignored_for", [])]),
        "<h2>Settings (the last run's, defaults included)</h2>"
        + _table(["setting", "value"], flat),
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
            [[m["url"], m["why"], m.get("from") or ""] for m in req.get("missing_examples", [])],
        ),
        f"<h2>WARC files ({format_number(c.get('warc_bytes', 0))} bytes)</h2>"
        + _table(
            ["file", "bytes", "SHA-256"],
            [[w["name"], w["bytes"], w["sha256"]] for w in c.get("warc_files", [])],
        )
        + (f"<p>CDXJ index: {html.escape(str(c['index']))}</p>" if c.get("index") else ""),
        f"<h2>Politeness audit of the crawl's own fetch log: {html.escape(verdict)}</h2>"
        + (
            _table(
                ["check", "where", "count", "examples"],
                [
                    [
                        v["check"],
                        v.get("host") or v.get("addr"),
                        v["count"],
                        "; ".join(v["examples"][:3]),
                    ]
                    for v in audit.get("violations", [])
                ],
            )
            if audit
            else ""
        ),
    ]
    return "\n".join(parts)


def render_html(report: dict[str, Any], title: str = "crawlkit crawl report") -> str:
    """One self-contained HTML page (inline CSS and SVG, no scripts)."""
    plots = report["plots"]
    counters = report.get("counters", {})
    kpis = [
        ("fetches", report["fetches"]),
        ("hosts", report["hosts"]),
        ("duration", f"{report['duration_s']:.1f} s"),
        ("rate", f"{report['fetch_rate_per_s'] or 0:.1f}/s"),
        ("bytes", f"{report['bytes'] / 1e6:.1f} MB"),
        ("copies", f"{100 * report['dedup'].get('copy_share', 0):.1f}%"),
    ]
    if "bloom_fp_rate" in counters:
        kpis.append(("Bloom false positives", f"{100 * float(counters['bloom_fp_rate']):.3f}%"))
    if "audit_violations" in counters:
        kpis.append(("audit violations", counters["audit_violations"]))
    kpi_html = "".join(f"<div>{html.escape(k)}<b>{html.escape(str(v))}</b></div>" for k, v in kpis)
    counter_rows = "".join(
        f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(format_number(v))}</td></tr>"
        for k, v in sorted(counters.items())
    )
    sections = [
        ("Fetch rate over time", _line_chart(plots["fetch_rate"], "fetch rate")),
        ("Status mix", _bar_chart(plots["status_mix"], "status mix")),
        ("Gap between fetches of one host", _bar_chart(plots["host_gaps"], "host gaps")),
        ("Top hosts", _bar_chart(plots["top_hosts"], "top hosts")),
        ("Trap and budget refusals", _bar_chart(plots["refusals"], "refusals")),
        ("Dedup", _bar_chart(plots["dedup"], "dedup")),
    ]
    body = "".join(f"<h2>{html.escape(t)}</h2>\n{chart}\n" for t, chart in sections)
    if report.get("collection"):
        body = _collection_html(report["collection"]) + body
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><div class=kpi>{kpi_html}</div>\n{body}"
        f"<h2>Counters</h2><table>{counter_rows}</table></body></html>\n"
    )
