"""``crawlkit audit``: prove after the fact how politely a crawler behaved.

Input is a request log as a server saw it (``crawlkit testweb``'s NDJSON: host, addr,
method, path, t_start, t_end, status, bytes, conn, user_agent, plus retry_after /
retry_until / depth / hostile where the test web adds them) or, when no server log
exists, crawlkit's own fetch records (url, fetched_at, elapsed_ms, ip, status). Robots
rules come from a test web manifest (``manifest.json``; found next to the log when not
given) and are matched with :mod:`crawlkit.robots`.

Checks, per host (docs/design.md invariants 2 and 3), each a *violation*:

* ``conns``: most requests in flight at once from distinct connections (overlap of
  [t_start, t_end]); more than ``per_host`` (1) is a violation. For fetch logs every
  record counts as its own connection.
* ``open_conns``: most connections open at once, a connection being open from its
  accept (``conn_opened``) to the end of its last response: two keep-alive
  connections used in turn are caught here even if no two requests overlapped.
* ``gap``: the time from the end of one response to the next request; below
  ``min_gap`` (the floor, DESIGN's 1 s; tests shorten it) is a violation.
* ``crawl_delay``: a gap below the robots.txt Crawl-delay for the request's agent.
* ``backoff``: a request after a 429 or 503 before the backoff ended: ``min_backoff``
  (DESIGN: 60 s) doubling with each consecutive 429/503 up to 1 h, and never before
  the Retry-After the server sent (``retry_until`` in the log). ``retry_after`` counts
  the requests that came before Retry-After itself expired.
* ``robots_first``: the first request to a host was not for /robots.txt (not judged
  when the log holds no robots.txt request at all, as a fetch log may).
* ``robots_unavailable``: a request (other than robots.txt) while the latest robots.txt
  answer was a 5xx (RFC 9309: disallow everything).
* ``disallowed``: a request for a path robots.txt disallows for its agent.
* ``trap_depth``: a trap depth (the test web logs ``depth`` on calendar, session and
  link-farm pages) above ``max_trap_depth``, when one is set.

Per address (an IPv4-mapped one, ``::ffff:a.b.c.d``, counted as ``a.b.c.d``, as
``--per-ip`` counts it): ``ip_conns`` — most connections in flight at once to one
address, against ``per_ip``; with ``per_ip_gap``, ``ip_gap`` — a request to an
address that started less than that after the one before it to the same address
started (``--per-ip-delay``).
Reported without failing (*warnings*): ``adaptive`` (a gap shorter than 0.9 ×
``adaptive_factor`` × the previous response's time: DESIGN's "10 × the last
fetch time", measured on the server so only approximate), ``duplicates`` (a path fetched with
200 more than once without validators) and ``hostile_bytes`` (bytes taken from hostile
endpoints). Every gap comparison allows ``tolerance`` seconds of clock jitter.
"""

from __future__ import annotations

import itertools
import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from crawlkit import streams
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InputError
from crawlkit.fetch.iptable import ip_key
from crawlkit.robots import RobotsTxt, agent_token
from crawlkit.times import parse_time

HOSTILE_KINDS = frozenset({"gzip-bomb", "huge", "slow-drip", "malformed"})
TRAP_KINDS = frozenset({"calendar", "session-trap", "link-farm"})
MAX_BACKOFF = 3600.0
VIOLATIONS = (
    "conns",
    "open_conns",
    "gap",
    "crawl_delay",
    "backoff",
    "retry_after",
    "robots_first",
    "robots_unavailable",
    "disallowed",
    "trap_depth",
    "ip_conns",
    "ip_gap",
)
WARNINGS = ("adaptive", "duplicates", "hostile_bytes")


@dataclass(slots=True)
class AuditConfig:
    """The limits the audit checks (seconds and counts)."""

    min_gap: float = 1.0
    per_host: int = 1
    per_ip: int = 2
    per_ip_gap: float | None = None  # starts to one address at least this far apart
    min_backoff: float = 60.0
    adaptive_factor: float = 10.0
    tolerance: float = 0.01
    max_trap_depth: int | None = None
    agent: str | None = None


@dataclass(slots=True)
class Event:
    """One request, from either kind of log."""

    host: str
    addr: str | None
    path: str
    t_start: float
    t_end: float
    status: int | None
    bytes: int = 0
    conn: Any = None
    agent: str = ""
    special: str | None = None
    retry_until: float | None = None
    depth: int | None = None
    hostile: bool = False
    conditional: bool = False
    method: str = "GET"
    conn_opened: float | None = None


@dataclass
class HostRules:
    """What robots.txt says for one host (from the manifest)."""

    robots: RobotsTxt | None
    status: int | None


@dataclass
class _HostReport:
    name: str
    kind: str | None = None
    requests: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VIOLATIONS + WARNINGS, 0))
    max_conns: int = 0
    max_open: int | None = None
    min_gap: float | None = None
    crawl_delay: float | None = None
    trap_depth: int | None = None
    distinct_paths: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)

    def flag(self, check: str, example: str, n: int = 1) -> None:
        self.counts[check] += n
        ex = self.examples.setdefault(check, [])
        if len(ex) < 5:
            ex.append(example)


def _url_path(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _number(rec: dict[str, Any], key: str, default: float | None = None) -> float:
    """``rec[key]`` as a number; ValueError in plain words when it is missing or not one.

    With a ``default``, a missing or null field is the default (a fetch record of an
    error has ``"bytes": null``)."""
    value = rec.get(key)
    if value is None:
        if default is None:
            raise ValueError(f'no "{key}"')
        return float(default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f'"{key}" is not a number: {value!r}')
    return float(value)


def events_from_server_log(
    lines: Iterable[tuple[str, int, dict[str, Any]]], reporter: Reporter
) -> list[Event]:
    """Events from ``crawlkit testweb`` request-log records, given as ``(source,
    line_number, record)``; a bad one is reported as ``FILE:LINE: reason`` and skipped."""
    out: list[Event] = []
    for source, lineno, rec in lines:
        try:
            if not rec.get("host") or rec.get("path") is None:
                continue  # a request too broken to have a host (logged as 400)
            out.append(
                Event(
                    host=str(rec["host"]),
                    addr=rec.get("addr"),
                    path=str(rec["path"]),
                    t_start=_number(rec, "t_start"),
                    t_end=_number(rec, "t_end"),
                    status=rec.get("status"),
                    bytes=int(_number(rec, "bytes", 0) or 0),
                    conn=rec.get("conn"),
                    agent=str(rec.get("user_agent") or ""),
                    special=rec.get("special"),
                    retry_until=rec.get("retry_until"),
                    depth=rec.get("depth"),
                    hostile=bool(rec.get("hostile")),
                    conditional=bool(rec.get("if_none_match") or rec.get("if_modified_since")),
                    method=str(rec.get("method") or "GET"),
                    conn_opened=rec.get("conn_opened"),
                )
            )
        except (TypeError, ValueError) as exc:
            reporter.bad_record(source, lineno, f"{exc}; skipped")
    return out


def events_from_fetch_log(
    lines: Iterable[tuple[str, int, dict[str, Any]]], reporter: Reporter, agent: str = "crawlkit"
) -> list[Event]:
    """Events from crawlkit fetch records, given as ``(source, line_number, record)``;
    records that made no request (no ``fetched_at``: refused, robots-denied, deferred
    before asking) are skipped. Fetch records carry no User-Agent, so robots.txt is
    matched for ``agent``."""
    out: list[Event] = []
    for i, (source, lineno, rec) in enumerate(lines, 1):
        start = parse_time(rec.get("fetched_at"))
        url = rec.get("url")
        if start is None or not isinstance(url, str):
            continue  # deferred or refused: no request was made
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if not host:
            reporter.bad_record(source, lineno, f"no host in url {url!r}; skipped")
            continue
        try:
            elapsed = _number(rec, "elapsed_ms", 0.0) / 1000.0
            size = int(_number(rec, "bytes", 0) or 0)
        except ValueError as exc:
            reporter.bad_record(source, lineno, f"{exc}; skipped")
            continue
        out.append(
            Event(
                host=host,
                addr=rec.get("ip"),
                path=_url_path(url),
                t_start=start,
                t_end=start + elapsed,
                status=rec.get("status"),
                bytes=size,
                conn=("fetch", i),
                agent=agent,
                conditional=rec.get("outcome") == "not-modified",
            )
        )
    return out


def rules_from_manifest(manifest: dict[str, Any]) -> dict[str, HostRules]:
    """Robots rules per host name from a test web manifest."""
    rules: dict[str, HostRules] = {}
    for host in manifest.get("hosts", []):
        robots = host.get("robots") or {}
        status = robots.get("status")
        body: bytes | None = None
        if robots.get("file"):
            body = Path(robots["file"]).read_bytes()
        elif robots.get("text") is not None:
            body = str(robots["text"]).encode("utf-8")
        if status is not None and status >= 500:
            parsed: RobotsTxt | None = RobotsTxt.disallow_all()
        elif body is None or (status is not None and 400 <= status < 500):
            parsed = RobotsTxt.allow_all()
        else:
            parsed = RobotsTxt.parse(body)
        rules[host["name"]] = HostRules(parsed, status)
    return rules


def _max_overlap(events: list[Event]) -> tuple[int, float | None]:
    """Most distinct connections with a request in flight at once, and when."""
    points: list[tuple[float, int, Any]] = []
    for e in events:
        points.append((e.t_start, 1, e.conn))
        points.append((e.t_end, 0, e.conn))  # ends sort before starts at equal times
    points.sort(key=lambda p: (p[0], p[1]))
    active: dict[Any, int] = defaultdict(int)
    best, when = 0, None
    for t, kind, conn in points:
        if kind == 1:
            active[conn] += 1
            if len(active) > best:
                best, when = len(active), t
        else:
            active[conn] -= 1
            if active[conn] <= 0:
                del active[conn]
    return best, when


def _max_open(events: list[Event]) -> tuple[int, float | None]:
    """Most connections open at once, each open from its accept (``conn_opened``, else
    its first request) to the end of its last response. An idle connection after its
    last response is invisible to a request log, so this never overcounts."""
    spans: dict[Any, list[float]] = {}
    for e in events:
        start = e.conn_opened if e.conn_opened is not None else e.t_start
        span = spans.get(e.conn)
        if span is None:
            spans[e.conn] = [start, e.t_end]
        else:
            span[0] = min(span[0], start)
            span[1] = max(span[1], e.t_end)
    points = sorted([(a, 1) for a, _ in spans.values()] + [(b, 0) for _, b in spans.values()])
    best, when, now = 0, None, 0
    for t, kind in points:
        now += 1 if kind else -1
        if now > best:
            best, when = now, t
    return best, when


def _is_robots(path: str) -> bool:
    return path.split("?", 1)[0] == "/robots.txt"


def _audit_host(
    name: str,
    events: list[Event],
    rules: HostRules | None,
    cfg: AuditConfig,
    robots_logged: bool = True,
) -> _HostReport:
    rep = _HostReport(name, kind=events[0].special, requests=len(events))
    tol = cfg.tolerance
    rep.max_conns, when = _max_overlap(events)
    if rep.max_conns > cfg.per_host:
        rep.flag(
            "conns", f"{rep.max_conns} in flight at t={when:.3f}", rep.max_conns - cfg.per_host
        )
    if events[0].conn_opened is not None:
        rep.max_open, when = _max_open(events)
        if rep.max_open > cfg.per_host:
            rep.flag(
                "open_conns",
                f"{rep.max_open} connections open at t={when:.3f}",
                rep.max_open - cfg.per_host,
            )
    first = events[0]
    if robots_logged and not _is_robots(first.path):
        rep.flag("robots_first", f"first request was {first.method} {first.path}")
    robots_status: int | None = None
    backoff_until = 0.0
    retry_until = 0.0
    streak = 0
    seen: dict[str, int] = defaultdict(int)
    depth: int | None = None
    for i, e in enumerate(events):
        agent = cfg.agent or agent_token(e.agent) or "*"
        robots = rules.robots if rules is not None else None
        delay = robots.crawl_delay(agent) if robots is not None else None
        if delay is not None:
            rep.crawl_delay = delay
        if i > 0:
            prev = events[i - 1]
            gap = e.t_start - prev.t_end
            rep.min_gap = gap if rep.min_gap is None else min(rep.min_gap, gap)
            where = f"{e.path} {gap * 1000:.1f} ms after {prev.path}"
            if gap < cfg.min_gap - tol:
                rep.flag("gap", where)
            elif delay is not None and gap < delay - tol:
                rep.flag("crawl_delay", where + f" (Crawl-delay {delay:g}s)")
            elif gap < 0.9 * cfg.adaptive_factor * (prev.t_end - prev.t_start) - tol:
                # 10% slack: the server sees a shorter fetch time than the crawler did.
                rep.flag("adaptive", where)
            if e.t_start < backoff_until - tol:
                rep.flag("backoff", f"{e.path} {backoff_until - e.t_start:.2f}s early")
            if e.t_start < retry_until - tol:
                rep.flag(
                    "retry_after", f"{e.path} {retry_until - e.t_start:.2f}s before Retry-After"
                )
        if e.status in (429, 503):
            streak += 1
            wait = min(cfg.min_backoff * 2 ** (streak - 1), MAX_BACKOFF)
            backoff_until = max(backoff_until, e.t_end + wait)
            if e.retry_until is not None:
                retry_until = max(retry_until, float(e.retry_until))
                backoff_until = max(backoff_until, retry_until)
        elif e.status is not None:
            streak = 0
        # A robots.txt or a hop of its redirect chain (which usually keeps the name).
        if _is_robots(e.path) or e.path.split("?", 1)[0].endswith("robots.txt"):
            if e.status is not None and not 300 <= e.status < 400:
                robots_status = e.status
            continue
        if robots_status is not None and robots_status >= 500:
            rep.flag("robots_unavailable", f"{e.path} while robots.txt answered {robots_status}")
        elif robots is not None and (rules is None or (rules.status or 200) < 500):
            verdict = robots.check(agent, e.path)
            if not verdict.allowed:
                rep.flag("disallowed", f"{e.path} ({verdict.rule})")
        if e.depth is not None:
            depth = e.depth if depth is None else max(depth, e.depth)
        if e.status == 200 and not e.conditional and e.method == "GET":
            seen[e.path] += 1
            if seen[e.path] == 2:
                rep.flag("duplicates", e.path)
            elif seen[e.path] > 2:
                rep.counts["duplicates"] += 1
        if e.hostile or (e.special in HOSTILE_KINDS and e.path != "/"):
            rep.counts["hostile_bytes"] += e.bytes
    rep.trap_depth = depth
    rep.distinct_paths = len({e.path for e in events})
    if cfg.max_trap_depth is not None and depth is not None and depth > cfg.max_trap_depth:
        rep.flag("trap_depth", f"depth {depth} > {cfg.max_trap_depth}")
    return rep


def audit(
    events: list[Event], rules: dict[str, HostRules] | None, config: AuditConfig
) -> dict[str, Any]:
    """The audit report (JSON-ready). ``report["ok"]`` is False when any violation exists.

    ``rules`` maps host names to robots rules; hosts without rules skip the robots
    checks (``"robots_rules": false`` in their entry)."""
    # A fetch log may leave robots.txt requests out; then "first" cannot be judged.
    robots_logged = any(_is_robots(e.path) for e in events)
    by_host: dict[str, list[Event]] = defaultdict(list)
    by_addr: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        by_host[e.host].append(e)
        if e.addr:
            # one server under both spellings (127.0.0.1, ::ffff:127.0.0.1) is one
            # address, as --per-ip counts it
            by_addr[ip_key(e.addr)].append(e)
    hosts: dict[str, Any] = {}
    violations: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    for name in sorted(by_host):
        evs = sorted(by_host[name], key=lambda e: (e.t_start, e.t_end))
        host_rules = (rules or {}).get(name)
        r = _audit_host(name, evs, host_rules, config, robots_logged)
        hosts[name] = {
            "kind": r.kind,
            "requests": r.requests,
            "max_conns": r.max_conns,
            "max_open_conns": r.max_open,
            "min_gap": None if r.min_gap is None else round(r.min_gap, 6),
            "crawl_delay_s": r.crawl_delay,
            "max_depth": r.trap_depth,
            "distinct_paths": r.distinct_paths,
            "robots_rules": host_rules is not None,
            "robots_first_checked": robots_logged,
            **r.counts,
            "examples": r.examples,
        }
        for check in VIOLATIONS:
            if r.counts[check]:
                violations.append(
                    {
                        "host": name,
                        "check": check,
                        "count": r.counts[check],
                        "examples": r.examples.get(check, []),
                    }
                )
        for check in WARNINGS:
            if r.counts[check]:
                warnings.append(
                    {
                        "host": name,
                        "check": check,
                        "count": r.counts[check],
                        "examples": r.examples.get(check, []),
                    }
                )
    addresses: dict[str, Any] = {}
    for addr in sorted(by_addr):
        evs = by_addr[addr]
        n, when = _max_overlap(evs)
        hosts_here = sorted({e.host for e in evs})
        addresses[addr] = {"max_conns": n, "limit": config.per_ip, "hosts": hosts_here}
        if config.per_ip_gap is not None:
            gaps = [(b - a, b) for a, b in itertools.pairwise(sorted(e.t_start for e in evs))]
            short = [(gap, t) for gap, t in gaps if gap < config.per_ip_gap - config.tolerance]
            addresses[addr]["min_start_gap"] = round(min(gaps)[0], 6) if gaps else None
            if short:
                violations.append(
                    {
                        "addr": addr,
                        "check": "ip_gap",
                        "count": len(short),
                        "examples": [f"{gap:.3f}s apart at t={t:.3f}" for gap, t in short[:3]],
                    }
                )
        if n > config.per_ip:
            violations.append(
                {
                    "addr": addr,
                    "check": "ip_conns",
                    "count": n - config.per_ip,
                    "examples": [f"{n} connections at t={when:.3f}"],
                }
            )
    return {
        "ok": not violations,
        "requests": len(events),
        "config": {
            "min_gap": config.min_gap,
            "per_host": config.per_host,
            "per_ip": config.per_ip,
            "per_ip_gap": config.per_ip_gap,
            "min_backoff": config.min_backoff,
            "adaptive_factor": config.adaptive_factor,
            "tolerance": config.tolerance,
            "max_trap_depth": config.max_trap_depth,
            "agent": config.agent,
        },
        "hosts": hosts,
        "addresses": addresses,
        "violations": violations,
        "warnings": warnings,
    }


def find_manifest(log_path: str | os.PathLike[str]) -> Path | None:
    """``manifest.json`` beside a test web log, if there is one."""
    candidate = Path(log_path).parent / "manifest.json"
    return candidate if candidate.is_file() else None


def run_audit(
    *,
    server_logs: list[str] | None = None,
    fetch_logs: list[str] | None = None,
    manifest: str | os.PathLike[str] | None = None,
    config: AuditConfig | None = None,
    reporter: Reporter | None = None,
) -> dict[str, Any]:
    """Read the logs (and the manifest) and audit them; see :func:`audit`."""
    reporter = reporter or NullReporter()
    config = config or AuditConfig()
    events: list[Event] = []
    if server_logs:
        events += events_from_server_log(
            streams.read_records_with_lines(server_logs, reporter), reporter
        )
    if fetch_logs:
        events += events_from_fetch_log(
            streams.read_records_with_lines(fetch_logs, reporter),
            reporter,
            config.agent or "crawlkit",
        )
    if manifest is None and server_logs:
        manifest = find_manifest(server_logs[0])
    rules = None
    if manifest is not None:
        try:
            rules = rules_from_manifest(streams.read_json(manifest))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read manifest {manifest}: {exc}") from exc
    report = audit(events, rules, config)
    report["manifest"] = str(manifest) if manifest is not None else None
    return report


def format_report(report: dict[str, Any]) -> str:
    """A readable table: one line per host, then per address, then the findings."""
    cols = (
        "host",
        "kind",
        "reqs",
        "conns",
        "open",
        "min_gap",
        "gap",
        "delay",
        "backoff",
        "retry",
        "robots1st",
        "r5xx",
        "disallow",
        "depth",
        "dups",
        "hostileB",
    )
    rows = [cols]
    for name, h in report["hosts"].items():
        gap = "-" if h["min_gap"] is None else f"{h['min_gap']:.3f}"
        first = ("no" if h["robots_first"] else "ok") if h["robots_first_checked"] else "?"
        rows.append(
            (
                name,
                str(h["kind"] or "-"),
                str(h["requests"]),
                str(h["max_conns"]),
                "-" if h["max_open_conns"] is None else str(h["max_open_conns"]),
                gap,
                str(h["gap"]),
                str(h["crawl_delay"]),
                str(h["backoff"]),
                str(h["retry_after"]),
                first,
                str(h["robots_unavailable"]),
                str(h["disallowed"]) if h["robots_rules"] else "?",
                "-" if h["max_depth"] is None else str(h["max_depth"]),
                str(h["duplicates"]),
                str(h["hostile_bytes"]),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append("")
    lines.append("address          max_conns  limit  hosts")
    for addr, a in report["addresses"].items():
        lines.append(f"{addr:<16} {a['max_conns']:>9}  {a['limit']:>5}  {' '.join(a['hosts'])}")
    lines.append("")
    for item in report["violations"]:
        where = item.get("host") or item.get("addr")
        lines.append(
            f"VIOLATION {item['check']} {where}: {item['count']}  "
            + "; ".join(item["examples"][:3])
        )
    for item in report["warnings"]:
        lines.append(
            f"warning {item['check']} {item['host']}: {item['count']}  "
            + "; ".join(str(x) for x in item["examples"][:3])
        )
    verdict = "ok: no violations" if report["ok"] else f"{len(report['violations'])} violation(s)"
    lines.append(f"{report['requests']} requests audited; {verdict}")
    return "\n".join(lines) + "\n"
