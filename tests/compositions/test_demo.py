"""`crawlkit demo`, run for real, judged by what a user gets from it.

One run of the command on a small web (module fixture), then one test per promise:
it exits 0 and says where everything is; the WARC (read by warcio) holds every page
the web's manifest says a polite crawler may fetch, and nothing the server did not
serve; the zstd NDJSON records and the HTML and JSON reports are readable and agree
with what the command printed; the server's own request log shows a polite crawl.

The web has no endless traps and no host that says "retry later" (those keep a crawl
going until --for), so the crawl reaches the end of the web and every reachable page
can be counted. It still has the robots.txt variants, redirects, duplicates, a gzip
bomb, malformed HTTP and a private host behind a gateway.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import zstandard
from conftest import Result, crawlkit
from warcio.archiveiterator import ArchiveIterator

MIN_DELAY = 0.1  # --min-delay of the run, and the gap the audit holds it to
TOLERANCE = 0.01  # clock jitter allowed, as crawlkit audit's default --tolerance
SPECIALS = (
    "none,robots-rules,robots-404,robots-redirect,robots-big,duplicates,near-duplicates,"
    "redirects,gzip-bomb,malformed,types,sitemaps,conditional,changing,private"
)


@dataclass
class Demo:
    result: Result
    directory: Path
    manifest: dict[str, Any]

    @property
    def public(self) -> list[dict[str, Any]]:
        return [h for h in self.manifest["hosts"] if not h["private"]]

    def requests(self) -> list[dict[str, Any]]:
        """The server's request log, one record per request."""
        text = (self.directory / "web" / "requests.ndjson").read_text("utf-8")
        return [json.loads(line) for line in text.splitlines()]

    def url(self, rec: dict[str, Any]) -> str:
        return f"http://{rec['host']}:{self.manifest['port']}{rec['path']}"

    def printed(self, pattern: str) -> re.Match[str]:
        """The first stdout line matching ``pattern`` (the test fails without one)."""
        match = re.search(pattern, self.result.text, re.MULTILINE)
        assert match, f"no line matching {pattern!r} in:\n{self.result.text}"
        return match


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    directory = tmp_path_factory.mktemp("demo") / "out"
    # --for is only a cap for a broken run: the crawl must end because the web does.
    result = crawlkit(
        "demo",
        "--dir",
        str(directory),
        "--hosts",
        "3",
        "--pages",
        "8",
        "--special",
        SPECIALS,
        "--min-delay",
        f"{MIN_DELAY}s",
        "--for",
        "10m",
        timeout=900,
    )
    assert result.code == 0, result.stderr
    manifest = json.loads((directory / "web" / "manifest.json").read_text("utf-8"))
    return Demo(result, directory, manifest)


def warc_captures(directory: Path) -> dict[str, list[str]]:
    """Target URI -> the kinds of capture ("200", "404", ..., "revisit") in DIR/state/warc,
    every record's payload read to its end."""
    files = sorted((directory / "state" / "warc").glob("*.warc.gz"))
    assert files, "no WARC file in state/warc"
    captures: dict[str, list[str]] = defaultdict(list)
    for path in files:
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                record.content_stream().read()
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "response":
                    captures[uri].append(record.http_headers.get_statuscode())
                elif record.rec_type == "revisit":
                    captures[uri].append("revisit")
    return captures


def test_demo_says_how_it_ended_and_where_the_report_is(demo: Demo) -> None:
    demo.printed(r"^crawl stopped: frontier empty after ")
    demo.printed(r"^\d+ requests audited; ok: no violations$")
    report = Path(demo.printed(r"^report: (.+)$").group(1))
    assert report == demo.directory / "report.html"
    assert report.is_file()


def test_every_reachable_page_is_fetched_or_refused_with_a_reason(demo: Demo) -> None:
    line = demo.printed(r"^test web: (\d+) reachable pages on \d+ hosts; (\d+) of them fetched")
    reachable, accounted = int(line.group(1)), int(line.group(2))
    assert reachable == demo.manifest["reachable_pages"]
    assert reachable == sum(len(h["pages"]) for h in demo.public) > 100
    assert accounted == reachable


def test_server_served_every_allowed_page_and_nothing_forbidden(demo: Demo) -> None:
    requests = demo.requests()
    served = {demo.url(r) for r in requests if r["method"] == "GET" and r["status"] == 200}
    allowed = {url for h in demo.public for url in h["allowed"]}
    assert len(allowed) == demo.manifest["allowed_pages"]
    assert sorted(allowed - served) == []
    requested = {demo.url(r) for r in requests}
    disallowed = {url for h in demo.public for url in h["disallowed"]}
    assert disallowed, "the web has robots-disallowed pages"
    assert sorted(disallowed & requested) == []
    private = [h["name"] for h in demo.manifest["hosts"] if h["private"]]
    assert private, "the web has a private host"
    assert [r for r in requests if r["host"] in private] == []


def test_warc_holds_every_allowed_page_and_only_what_was_served(demo: Demo) -> None:
    captures = warc_captures(demo.directory)
    allowed = {url for h in demo.public for url in h["allowed"]}
    captured_ok = {uri for uri, kinds in captures.items() if "200" in kinds or "revisit" in kinds}
    assert sorted(allowed - captured_ok) == []
    requested = {demo.url(r) for r in demo.requests()}
    assert sorted(set(captures) - requested) == []


def test_zstd_page_records_are_readable_and_counted(demo: Demo) -> None:
    files = sorted((demo.directory / "state" / "crawl" / "cycles").glob("*/pages.ndjson.zst"))
    assert files, "no pages.ndjson.zst in the crawl's cycles"
    records = []
    for path in files:
        with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as stream:
            records += [json.loads(line) for line in stream.read().splitlines()]
    parsed = int(demo.printed(r"^\s+pages parsed (\d+) \(").group(1))
    assert len(records) == parsed > 0
    captures = warc_captures(demo.directory)
    assert sorted({r["url"] for r in records} - set(captures)) == []


class _WellFormed(HTMLParser):
    VOID = frozenset(
        {"meta", "br", "img", "link", "input", "hr", "rect", "line", "polyline", "circle", "path"}
    )

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.tags: defaultdict[str, int] = defaultdict(int)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID:
            assert self.open and self.open[-1] == tag, (self.open[-3:], tag)
            self.open.pop()


def test_html_report_is_a_page_with_plots(demo: Demo) -> None:
    text = (demo.directory / "report.html").read_text("utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "<title>crawlkit demo crawl</title>" in text
    page = _WellFormed()
    page.feed(text)
    page.close()
    assert page.open == []
    assert page.tags["svg"] >= 3
    assert page.tags["script"] == 0


def test_json_report_of_the_state_agrees_with_the_demo(demo: Demo) -> None:
    result = crawlkit("report", "--state", str(demo.directory / "state"), timeout=300)
    assert result.code == 0, result.stderr
    report = json.loads(result.stdout)
    printed = demo.printed(r"^\s+fetch outcomes: (.+)$").group(1)
    outcomes = {k: int(v) for k, v in (item.rsplit(" ", 1) for item in printed.split(", "))}
    assert report["outcomes"] == outcomes
    assert report["fetches"] == sum(outcomes.values())
    assert report["outcomes"]["fetched"] >= demo.manifest["allowed_pages"]


def test_server_log_shows_a_polite_crawl(demo: Demo) -> None:
    """crawlkit audit over the server's log, and the two rules checked here by hand:
    one request at a time per host, and --min-delay between them."""
    requests = demo.requests()
    log = demo.directory / "web" / "requests.ndjson"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "crawlkit",
            "audit",
            "--server-log",
            str(log),
            "--min-gap",
            f"{MIN_DELAY}s",
            "--json",
        ],
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    audit = json.loads(proc.stdout)
    assert audit["requests"] == len(requests) > demo.manifest["reachable_pages"]
    assert audit["violations"] == []
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in requests:
        by_host[rec["host"]].append(rec)
    for host, recs in by_host.items():
        recs.sort(key=lambda r: r["t_start"])
        for before, after in pairwise(recs):
            gap = after["t_start"] - before["t_end"]
            assert gap >= MIN_DELAY - TOLERANCE, (host, before["path"], after["path"], gap)
