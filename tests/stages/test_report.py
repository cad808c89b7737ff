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
        recs.append(
            {
                "url": f"http://a.test/{i}",
                "host": "a.test",
                "outcome": "fetched",
                "status": 200,
                "fetched_at": 1000.0 + 2 * i,
                "bytes": 100,
            }
        )
    for i in range(10):
        stamp = f"2026-01-01T00:00:{i * 5:02d}Z"
        status = 404 if i % 2 else 200
        recs.append(
            {
                "url": f"http://b.test/{i}",
                "host": "b.test",
                "outcome": "fetched",
                "status": status,
                "fetched_at": stamp,
                "bytes": 50,
            }
        )
    recs.append(
        {"url": "http://c.test/x", "outcome": "robots-denied", "status": None, "fetched_at": None}
    )
    return recs


def test_report_numbers() -> None:
    rep = build_report(
        _fetches(),
        dedups=[{"kind": "unique"}] * 6 + [{"kind": "exact"}] * 3 + [{"kind": "near"}],
        refusals=[{"refused": "path-depth"}] * 2 + [{"refused": "budget"}],
        counters={"bloom_fp_rate": 0.0009},
    )
    assert rep["fetches"] == 41
    # the robots-denied URL was never asked (no fetched_at): records are not requests
    assert rep["requests"] == 40
    assert "requests<b>40</b>" in render_html(rep)  # the glance said 41: every record
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


def test_numbers_read_as_numbers_not_raw_floats() -> None:
    from crawlkit.report import format_number

    assert format_number(8.62e-54) == "< 0.000001"
    assert format_number(0.0009) == "0.0009"
    assert format_number(1234567) == "1,234,567"
    assert format_number(2.5) == "2.5"
    assert format_number(0.0) == "0" and format_number(None) == "None"
    page = render_html(
        build_report(_fetches(), counters={"expected_fp_rate": 8.62e-54, "seen_urls": 123456})
    )
    assert "e-54" not in page and "&lt; 0.000001" in page and "123,456" in page


def test_collection_section_renders_well_formed() -> None:
    rep = build_report(_fetches())
    rep["collection"] = {
        "seeds": ["http://a.test/"],
        "settings": {"scope": "site", "fetch": {"min_delay": 1.0}},
        "mime_types": [{"type": "text/html", "count": 40, "bytes": 4500}],
        "statuses": {"404": {"count": 5, "examples": ["http://b.test/1"]}},
        "problems": {"refused: excluded": {"count": 1, "examples": ["http://a.test/<x>"]}},
        "requisites": {
            "fetched": 3,
            "missing": 1,
            "missing_examples": [
                {"url": "http://a.test/i.png", "why": "HTTP 404", "from": "http://a.test/"}
            ],
        },
        "warc_files": [{"name": "a.warc.gz", "bytes": 2048, "sha256": "ab" * 32}],
        "warc_bytes": 2048,
        "warc_new_files": [{"name": "b.warc.gz.open", "bytes": 512, "open": True}],
        "index": "/c/warc/index.cdxj",
        "audit": {"ok": True, "requests": 41, "violations": [], "warnings": []},
    }
    page = render_html(rep)
    checker = _Checker()
    checker.feed(page)
    checker.close()
    for text in (
        "Seeds",
        "scope",
        "fetch.min_delay",
        "text/html",
        "http://b.test/1",
        "http://a.test/&lt;x&gt;",
        "3 fetched, 1 missing",
        "HTTP 404",
        "ab" * 32,
        "2,048",
        "b.warc.gz.open",
        "polite: no violations",
    ):
        assert text in page, text


def test_report_reads_top_down_glance_charts_tables_then_settings() -> None:
    """At a glance first (pages, requisites, errors, time, politeness), charts before
    tables, per-host and per-seed tables, settings as text in a collapsed section,
    the Bloom filter's numbers last."""
    rep = build_report(_fetches(), counters={"bloom_fp_rate": 0.0009, "seen_urls": 41})
    rep["collection"] = {
        "seeds": ["http://a.test/"],
        "seeds_table": [
            {"seed": "http://a.test/", "status": 200, "outcome": "fetched", "pages": 30}
        ],
        "settings": {
            "allow_net": ["127.0.0.0/9", "::1/128"],
            "fetch": {"min_delay": 1.0, "proxy": None, "insecure": False},
        },
        "mime_types": [{"type": "text/html", "count": 35, "bytes": 4500}],
        "requisites": {"fetched": 7, "missing": 2, "missing_examples": []},
        "audit": {"ok": True, "requests": 41, "violations": [], "warnings": []},
    }
    page = render_html(rep)
    glance = page[page.index("<div class=kpi>") : page.index("</div>\n")]
    for label, value in (
        ("pages", "35"),
        ("requisites", "7 (2 missing)"),
        ("errors", "5"),
        ("time", "s"),
        ("politeness", "polite: no violations"),
    ):
        assert f"<div>{label}<b>{value}" in glance or (label == "time" and "time<b>" in glance)
    order = [
        page.index("<div class=kpi>"),
        page.index("<svg"),
        page.index("<h2>Seeds</h2>"),
        page.index("<h2>Hosts</h2>"),
        page.index("<details><summary>Settings"),
        page.index("Bloom") if "Bloom" in page else page.index("bloom_fp_rate"),
    ]
    assert order == sorted(order)
    assert "<td>a.test</td><td>30</td><td>30</td><td>0</td>" in page  # host row
    assert "<td>b.test</td><td>10</td><td>5</td><td>5</td>" in page
    assert "allow_net = 127.0.0.0/9, ::1/128" in page  # text, not a Python repr
    assert "fetch.insecure = no" in page and "fetch.proxy = (none)" in page
    assert "[&#x27;" not in page and "['" not in page


def test_a_url_handed_out_twice_is_no_problem_of_the_collection(tmp_path) -> None:
    """After a kill -9 a URL can be handed out twice in one cycle: the fetcher asks it
    once and answers the copy "refused: duplicate". The report listed those copies
    as problems of pages that were fetched (a helper's kill -9 loop: 8 of them)."""
    from crawlkit.stages.report_collection import collection_section

    url = "http://a.test/page"
    fetched = {"url": url, "outcome": "fetched", "status": 200, "content_type": "text/html"}
    copy = {
        "url": url,
        "outcome": "refused",
        "refused": "duplicate",
        "error": "the same URL is already queued or in flight",
    }
    lost = {"url": "http://a.test/gone", "outcome": "error", "error": "timeout after 30s"}
    section = collection_section(tmp_path, [fetched, copy, lost], [])
    assert list(section["problems"]) == ["error: timeout after 30s"], section["problems"]
