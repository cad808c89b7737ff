"""The crawl loop's timeline (``crawl --timeline FILE``, see crawlkit/crawl/timeline.py)
summed up per 5 s for ``bench_crawl.py --timeline``."""

from __future__ import annotations

import json
from pathlib import Path


def loop_windows(path: Path, width: int = 5) -> list[dict]:
    """The crawl loop's timeline (``crawl --timeline``, one line a second) in
    ``width``-s windows: fetch records and refills summed, states averaged (``backlog``:
    the largest), for telling why a window went idle."""
    lines = [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    out = []
    for i in range(0, len(lines), width):
        group = lines[i : i + width]
        row = {"t": group[-1]["t"]}
        for key in ("records", *(k for k in group[0] if k.startswith("refill_"))):
            row[key] = sum(g[key] for g in group)
        for key in ("in_flight", "waiting", "due", "held", "live", "post_busy", "queued"):
            row[key] = round(sum(g.get(key, 0) for g in group) / len(group), 2)
        row["lag"] = max(g.get("lag", 0.0) for g in group)
        row["backlog"] = max(g["backlog"] for g in group)
        out.append(row)
    return out


def print_loop(windows: list[dict]) -> None:
    """The loop's 5-s windows; a window under 10% of the mean fetch records while URLs
    are queued in the frontier is marked IDLE, with the refills' answers in it."""
    if not windows:
        return
    mean = sum(w["records"] for w in windows) / len(windows)
    print(
        "    loop per 5 s: t records in_flight waiting due held live backlog post_busy queued"
        " lag | refills given(urls)/backlog/hold/empty"
    )
    for w in windows:
        idle = w["records"] < 0.1 * mean and w["queued"] > 0
        print(
            f"    {w['t']:6.1f} {w['records']:6d} {w['in_flight']:7.1f} {w['waiting']:7.1f} "
            f"{w['due']:5.0f} "
            f"{w['held']:7.0f} {w['live']:5.0f} {w['backlog']:3d} {w['post_busy']:5.2f} "
            f"{w['queued']:8.0f} {w['lag']:5.2f} | {w['refill_given']}({w['refill_urls']})/"
            f"{w['refill_backlog']}/{w['refill_hold']}/{w['refill_empty']}"
            f"{'  IDLE' if idle else ''}"
        )


def loop_idle(windows: list[dict]) -> int:
    """5-s windows under 10% of the mean fetch records while URLs are queued."""
    if not windows:
        return 0
    mean = sum(w["records"] for w in windows) / len(windows)
    return sum(1 for w in windows if w["records"] < 0.1 * mean and w["queued"] > 0)
