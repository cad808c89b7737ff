"""A crawl of one site at a short gap: fed in batches, not a page at a time.

``--per-host`` (4) spreads what the fetcher holds over many hosts; with one host
queued each refill gave it a URL or two: a frontier batch (queue heads read and
rotated, a commit with fsyncs) per page, and a pause after each batch that gave
nothing. Judged by the server's log (the gap, one connection) and by the crawl's own
timeline for how many batches fed it, never by speed.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from conftest import crawlkit, start_testweb

from crawlkit.crawl.core import HOLD_PER_SLOT
from crawlkit.crawl.feed import FEW_HOSTS_PER_HOST

GAP = 0.02  # the politeness gap configured, asserted below


def test_one_site_is_fed_in_batches_and_keeps_its_gap(tmp_path: Path) -> None:
    timeline = tmp_path / "timeline.ndjson"
    web_args = ("--hosts", "1", "--pages", "200", "--special", "none", "--seed", "5")
    with start_testweb(tmp_path, *web_args) as web:
        res = crawlkit(
            "crawl",
            str(web.seeds),
            "--state",
            str(tmp_path / "state"),
            "--min-delay",
            f"{GAP}s",
            "--delay-factor",
            "0",
            "--no-budgets",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--timeline",
            str(timeline),
            "--json",
            timeout=300,
        )
        assert res.code == 0, res.stderr
        requests = [q for q in web.requests() if q["path"] != "/robots.txt"]
        pages = web.manifest["hosts"][0]["pages"]
    summary = json.loads(res.stdout)
    assert summary["stopped"] == "frontier empty"
    assert len(requests) == len(pages) >= 150  # every page, each once
    # one connection at a time, and the gap configured between them
    order = sorted(requests, key=lambda q: q["t_start"])
    gaps = [b["t_start"] - a["t_end"] for a, b in itertools.pairwise(order)]
    assert min(gaps) >= GAP - 0.005, min(gaps)
    # Batches: the first ones give the home page and its links; then up to
    # FEW_HOSTS_PER_HOST URLs at a time, refilled at half. At 4 URLs a batch (a page
    # or two each, as before) it took more than one batch per 4 pages.
    lines = [json.loads(line) for line in timeline.read_text().splitlines()]
    batches = sum(x["refill_given"] for x in lines)
    assert batches * 8 <= len(requests), (batches, len(requests))
    assert max(x["held"] for x in lines) > 4  # more than --per-host held at once
    assert max(x["held"] for x in lines) <= FEW_HOSTS_PER_HOST


def test_the_help_gives_the_hold_and_the_few_hosts_share_the_loop_uses() -> None:
    res = crawlkit("crawl", "--help")
    assert res.code == 0, res.stderr
    text = " ".join(res.stdout.decode().split())
    assert f"holds at most {HOLD_PER_SLOT} × --concurrency URLs" in text
    assert f"queued up to a second of --min-delay gaps, at most {FEW_HOSTS_PER_HOST}," in text
