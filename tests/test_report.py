"""The crawl report: numbers in the JSON, and an HTML page that is well formed."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import ClassVar

from crawlkit.report import build_report, parse_time, render_html


class _Checker(HTMLParser):
    VOID: ClassVar[set[str]] = {
        "meta",
        "br",
        "img",
        "link",
        "input",
        "hr",
        "rect",
        "line",
        "polyline",
    }

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.svgs = 0
        self.scripts = 0

    def handle_starttag(self, tag, attrs):  # type: ignore[override]
        if tag == "svg":
            self.svgs += 1
        if tag == "script":
            self.scripts += 1
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):  # type: ignore[override]
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, (self.stack[-3:], tag)
        self.stack.pop()


def _fetches() -> list[dict]:
    recs = []
    for i in range(30):
        recs.append({"url": f"http://a.test/{i}", "host": "a.test", "outcome": "fetched",
                     "status": 200, "fetched_at": 1000.0 + 2 * i, "bytes": 100})  # fmt: skip
    for i in range(10):
        stamp = f"2026-01-01T00:00:{i * 5:02d}Z"
        status = 404 if i % 2 else 200
        recs.append({"url": f"http://b.test/{i}", "host": "b.test", "outcome": "fetched",
                     "status": status, "fetched_at": stamp, "bytes": 50})  # fmt: skip
    recs.append({"url": "http://c.test/x", "outcome": "robots-denied", "status": None})
    return recs


def test_report_numbers() -> None:
    rep = build_report(
        _fetches(),
        dedups=[{"kind": "unique"}] * 6 + [{"kind": "exact"}] * 3 + [{"kind": "near"}],
        refusals=[{"refused": "path-depth"}] * 2 + [{"refused": "budget"}],
        counters={"bloom_fp_rate": 0.0009},
    )
    assert rep["fetches"] == 41
    assert rep["outcomes"] == {"fetched": 40, "robots-denied": 1}
    assert rep["statuses"]["200"] == 35 and rep["statuses"]["404"] == 5
    assert rep["hosts"] == 2
    assert rep["smallest_host_gap_s"] == 2.0
    assert rep["dedup"]["copy_share"] == 0.4
    assert rep["refusals"] == {"path-depth": 2, "budget": 1}
    assert sum(p["value"] for p in rep["plots"]["host_gaps"]) == 29 + 9
    assert rep["plots"]["top_hosts"][0] == {"label": "a.test", "value": 30}


def test_html_is_self_contained_and_well_formed() -> None:
    page = render_html(build_report(_fetches(), counters={"audit_violations": 0}))
    checker = _Checker()
    checker.feed(page)
    checker.close()
    assert checker.stack == ["html"] or checker.stack == []
    assert checker.svgs == 4 and checker.scripts == 0  # no dedup or refusal data here
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")


def test_empty_crawl_renders() -> None:
    page = render_html(build_report([]))
    assert "No data for fetch rate" in page


def test_parse_time() -> None:
    assert parse_time(5) == 5.0
    assert parse_time("1970-01-01T00:00:10Z") == 10.0
    assert parse_time("garbage") is None and parse_time(None) is None
