"""A stylesheet stored as a revisit is parsed against its own URL.

`fr/css/base.css` is byte-identical to `en/css/base.css`, so it is stored as a revisit
(identical payload); its `url(../img/grid.png)` must still be resolved against `/fr/`
and that image fetched. Served by a small site on loopback whose request log is the
judge.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from conftest import crawlkit, serve_routes
from warcio.archiveiterator import ArchiveIterator

CSS = b"body { background: url(../img/grid.png) }\n"
PAGE = (
    b'<!doctype html><html><head><title>%s</title><link rel="stylesheet" '
    b'href="css/base.css"></head><body><a href="/en/">en</a> <a href="/fr/">fr</a>'
    b"</body></html>"
)
ROUTES: dict[str, tuple[str, bytes]] = {
    "/": ("text/html", b'<!doctype html><a href="/en/">en</a> <a href="/fr/">fr</a>'),
    "/en/": ("text/html", PAGE % b"en"),
    "/fr/": ("text/html", PAGE % b"fr"),
    "/en/css/base.css": ("text/css", CSS),
    "/fr/css/base.css": ("text/css", CSS),  # the same bytes: a revisit
    "/en/img/grid.png": ("image/png", b"\x89PNG\r\n\x1a\nen-grid"),
    "/fr/img/grid.png": ("image/png", b"\x89PNG\r\n\x1a\nfr-grid"),
}


@pytest.fixture
def site() -> Iterator[tuple[str, list[str]]]:
    with serve_routes(ROUTES) as (root, log):
        yield root + "/", log


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_stylesheet_stored_as_a_revisit_gets_its_own_requisites(
    tmp_path: Path, site: tuple[str, list[str]], jobs: str
) -> None:
    root, log = site
    out = tmp_path / "coll"
    res = crawlkit(
        "archive", root, str(out), "--allow-net", "127.0.0.1/32", "--min-delay", "0.02s", "-j", jobs
    )
    assert res.code == 0, res.stderr
    types: dict[str, str] = {}
    for warc in sorted(out.glob("warc/*.warc.gz")):
        with open(warc, "rb") as f:
            for r in ArchiveIterator(f):
                if r.rec_type in ("response", "revisit"):
                    types[r.rec_headers.get_header("WARC-Target-URI")] = r.rec_type
    assert types[root + "fr/css/base.css"] == "revisit"  # the case under test
    assert "/fr/img/grid.png" in log and "/en/img/grid.png" in log
    assert types[root + "fr/img/grid.png"] == "response"
    assert sorted(p for p in log if p != "/robots.txt") == sorted(ROUTES)  # each once
    report = orjson.loads((out / "report.json").read_text())["collection"]["requisites"]
    assert report["missing"] == 0, report


def test_requisites_left_by_a_budget_are_missing_with_why(
    tmp_path: Path, site: tuple[str, list[str]]
) -> None:
    """Plain crawl with budgets: the requisites it parked are in the report, each with
    why, and the summary says so on a line of its own."""
    from crawlkit.crawl import CrawlOptions, crawl
    from crawlkit.crawl.summary import summary_text
    from crawlkit.fetch.engine import FetchConfig
    from crawlkit.frontier.budgets import BudgetPolicy
    from crawlkit.stages.report import crawl_report

    root, log = site
    state = tmp_path / "S"
    options = CrawlOptions(
        scope="site",
        allow_net=("127.0.0.1/32",),
        fetch=FetchConfig(min_delay=0.02, delay_factor=1.0, timeout=5.0),
        budget_policy=BudgetPolicy(base=2, per_linker=0, seed_bonus=2),  # 4 URLs a period
        idle_wait=0.2,
    )
    summary = crawl(state, [root], options)
    assert summary.parked > 0, summary.to_json()
    assert "NOT FETCHED: " in summary_text(summary.to_json())
    missing = crawl_report(state)["collection"]["requisites"]["missing_examples"]
    parked = {m["url"] for m in missing if m["why"].startswith("parked: ")}
    fetched = {root.rstrip("/") + p for p in log}
    assert parked, missing
    assert not parked & fetched  # the server never saw them
    assert {u for u in (root + "en/css/base.css", root + "fr/css/base.css")} - fetched <= parked
