"""Where a crawl's request time goes: the server's log against the crawl's fetch records.

Reads a directory that ``bench/bench_crawl.py --keep`` left (``web-*/requests.ndjson``,
testweb's request log, and ``crawlkit-*/state/crawl/cycles/*/fetch.ndjson``, the
crawl's fetch records) and prints, as percentiles:

* the gap the server saw between two requests to one host (end of one to start of
  the next): what politeness (``--delay-factor`` x the fetch time the crawler
  measured, Crawl-delay) and the feed left idle;
* the most requests the server was handling at once;
* each page request cut into its legs, matched by host and path: the crawler's start
  to the server's accept (a new connection) and to the request parsed, the
  server's handler, the handler's end to the crawler's end, and the crawler's
  ``elapsed_ms`` (the fetch time its gap is 10 x of). New and reused connections apart.

    .venv/bin/python bench/bench_crawl.py --full --scenario few-seed --tools crawlkit --keep
    .venv/bin/python bench/crawl_latency.py /tmp/bench-crawl-XXXXXXXX

The crawler's start is ``fetched_at`` (millisecond resolution); both sides read the
same clock (one machine).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import glob
import itertools
import json
import urllib.parse
from pathlib import Path
from typing import Any

LEGS = (
    "crawler start -> accept",
    "crawler start -> req parsed",
    "server handler",
    "handler end -> crawler end",
    "crawler elapsed_ms",
)
POINTS = (0.1, 0.25, 0.5, 0.75, 0.9)


def _percentiles(values: list[float]) -> str:
    if not values:
        return "(none)"
    values = sorted(values)
    return " ".join(f"p{int(p * 100)}={values[int(p * (len(values) - 1))]:.3f}" for p in POINTS)


def _read(path: str) -> list[dict[str, Any]]:
    with open(path, "rb") as f:
        return [json.loads(line) for line in f if line.strip()]


def host_gaps(server: list[dict[str, Any]]) -> list[float]:
    """Seconds from the end of one request to a host to the start of its next."""
    by_host: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in server:
        by_host[r["host"]].append(r)
    gaps: list[float] = []
    for reqs in by_host.values():
        reqs.sort(key=lambda r: r["t_start"])
        gaps.extend(b["t_start"] - a["t_end"] for a, b in itertools.pairwise(reqs))
    return gaps


def most_at_once(server: list[dict[str, Any]]) -> int:
    """The most requests the server was handling at one moment."""
    events = sorted(
        [(r["t_start"], 1) for r in server] + [(r["t_end"], -1) for r in server],
        key=lambda e: (e[0], e[1]),
    )
    now = top = 0
    for _, step in events:
        now += step
        top = max(top, now)
    return top


def legs(server: list[dict[str, Any]], fetches: list[dict[str, Any]]) -> dict[str, list[tuple]]:
    """Each matched page request's legs (seconds), split by new and reused connection."""
    first: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in server:
        first.setdefault((r["host"], r["path"]), r)
    out: dict[str, list[tuple]] = {"new": [], "reused": []}
    for rec in fetches:
        if rec.get("elapsed_ms") is None or not rec.get("fetched_at"):
            continue
        u = urllib.parse.urlsplit(str(rec["url"]))
        s = first.get((u.hostname, u.path + (f"?{u.query}" if u.query else "")))
        if s is None or not s.get("conn_opened"):
            continue
        start = datetime.datetime.fromisoformat(str(rec["fetched_at"]).replace("Z", "+00:00"))
        t0 = start.timestamp()
        elapsed = float(rec["elapsed_ms"]) / 1000
        row = (
            s["conn_opened"] - t0,
            s["t_start"] - t0,
            s["t_end"] - s["t_start"],
            t0 + elapsed - s["t_end"],
            elapsed,
        )
        # accepted before the crawler started this request (1 ms: fetched_at's grain)
        out["new" if row[0] > -0.002 else "reused"].append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("kept", type=Path, help="a directory bench_crawl.py --keep left")
    args = ap.parse_args()
    server = [r for p in glob.glob(str(args.kept / "web-*/requests.ndjson")) for r in _read(p)]
    cycles = str(args.kept / "crawlkit-*/state/crawl/cycles/*/fetch.ndjson")
    fetches = [r for p in glob.glob(cycles) for r in _read(p)]
    print(f"server requests {len(server)}, crawler fetch records {len(fetches)}")
    print(f"gap between two requests to one host, s: {_percentiles(host_gaps(server))}")
    print(f"most requests in the server's handler at once: {most_at_once(server)}")
    for kind, rows in legs(server, fetches).items():
        print(f"{kind} connection: {len(rows)} page requests, seconds")
        for i, name in enumerate(LEGS):
            if kind == "reused" and i == 0:
                continue  # the accept was for an earlier request
            print(f"  {name:28} {_percentiles([row[i] for row in rows])}")


if __name__ == "__main__":
    main()
