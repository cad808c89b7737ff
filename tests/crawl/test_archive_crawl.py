"""crawl for archives: requisites outside the scope, exclude patterns, the CDXJ index.

Judged from testweb's request log (what was asked of the server) and its manifest
(what each page needs), not from the crawler's own counters.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from archive_tools import cdxj_indexer
from conftest import RAW, crawlkit, serve_routes, start_testweb

from crawlkit import streams
from crawlkit.crawl.archive import ArchiveOptions, Excludes, LinkPolicy
from crawlkit.errors import UsageError

GAP = "0.05s"


def crawl_args(web, state: Path, seed: str, *extra: str) -> list[str]:
    return [
        "crawl",
        seed,
        "--state",
        str(state),
        "--scope",
        "site",
        "--no-budgets",
        "--min-delay",
        GAP,
        "--allow-net",
        web.info["allow_net"],
        "--hosts-file",
        str(web.hosts_file),
        "--timeout",
        "5s",
        *extra,
    ]


def fetch_records(state: Path) -> list[dict]:
    return [
        r
        for log in sorted(state.glob("crawl/cycles/*/fetch.ndjson"))
        for r in streams.read_records([log])
    ]


def refused(state: Path) -> list[dict]:
    return [
        r
        for p in sorted(state.glob("crawl/**/*refused.ndjson.zst"))
        for r in streams.read_records([p])
    ]


def requested(web) -> set[str]:
    return {f"http://{q['host']}:{q['port']}{q['path']}" for q in web.requests()}


def audit_ok(web) -> dict:
    res = crawlkit("audit", "--server-log", str(web.log_path), "--min-gap", GAP, "--json")
    return orjson.loads(res.stdout)


@pytest.fixture
def web(tmp_path):
    with start_testweb(tmp_path, "--hosts", "1", "--pages", "3", "--special", "requisites") as w:
        yield w


def test_crawl_fetches_every_requisite_even_outside_the_scope(tmp_path, web):
    site = web.hosts_of_kind("requisites")[0]
    assets = web.hosts_of_kind("assets")[0]
    state = tmp_path / "state"
    res = crawlkit(*crawl_args(web, state, site["root"], "--json"), timeout=180)
    assert res.code == 0, res.stderr
    asked = requested(web)
    report = audit_ok(web)
    fetches = fetch_records(state)

    needed = {u for urls in site["notes"]["requisites"].values() for u in urls}
    assert needed - asked == set()  # every requisite of every page, from the server's view
    by_url = {r["url"]: r for r in fetches}
    for url in needed:
        assert by_url[url]["outcome"] == "fetched" and by_url[url]["reason"] == "requisite"
    # the other site (outside --scope site) gave only what the pages borrow, after its
    # robots.txt; its pages were never crawled
    on_assets = [q["path"] for q in web.requests() if q["host"].startswith(assets["name"])]
    assert on_assets[0] == "/robots.txt"
    assert set(on_assets[1:]) == {"/lib.js", "/cdn.png", "/cdn.css", "/cdn-bg.png"}
    # the import chain is cut after MAX_REQUISITE_HOPS (5): deep-0 (hop 1) .. deep-4
    chain = site["notes"]["deep_chain"]
    assert [u for u in chain if u in asked] == chain[:5]
    cut = [r for r in refused(state) if r.get("refused") == "requisite-depth"]
    assert [r["url"] for r in cut] == [chain[5]]
    assert "at most 5" in cut[0]["detail"]
    # politeness and robots hold for requisites too
    assert report["ok"], report["violations"][:5]
    # the collection's CDXJ index is there and is cdxj-indexer's
    index = state / "warc" / "index.cdxj"
    warcs = sorted(str(p) for p in (state / "warc").glob("*.warc.gz"))
    assert index.read_text() == cdxj_indexer(*warcs)
    assert len(index.read_text().splitlines()) >= len(needed) + 2


def _moved(status: int, location: str) -> tuple[str, bytes]:
    return RAW, f"HTTP/1.0 {status} Moved\r\nLocation: {location}\r\n\r\n".encode()


def test_a_requisite_that_redirects_is_followed_to_its_target(tmp_path):
    """A stylesheet or image that redirects (a CDN's habit) is captured where it
    lands, on the page's host or another, and counts as a requisite, not as a link
    of one: before, every target was refused ``from-requisite`` and the report said
    nothing was missing."""
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
    with serve_routes({"/off.png": ("image/png", png), "/page.html": ("text/html", b"x")}) as (
        other,
        other_log,
    ):
        page = (
            '<html><head><link rel="stylesheet" href="/style.css"></head><body>'
            '<img src="/img/chain.png"><img src="/img/offsite.png"></body></html>'
        )
        routes = {
            "/": ("text/html", page.encode()),
            "/style.css": _moved(301, "/css/real.css"),
            "/css/real.css": ("text/css", b"body { background: url(bg.png) }"),
            "/css/bg.png": ("image/png", png),
            "/img/chain.png": _moved(302, "/img/chain2.png"),
            "/img/chain2.png": _moved(302, "chain3.png"),  # relative
            "/img/chain3.png": ("image/png", png),
            "/img/offsite.png": _moved(302, f"{other}/off.png"),
        }
        with serve_routes(routes) as (root, log):
            state = tmp_path / "state"
            args = ["crawl", f"{root}/", "--state", str(state), "--scope", "host"]
            args += ["--min-delay", GAP, "--allow-net", "127.0.0.0/8", "--timeout", "5s"]
            res = crawlkit(*args, timeout=120)
            assert res.code == 0, res.stderr
    assert {"/css/real.css", "/css/bg.png", "/img/chain3.png"} <= set(log)
    assert other_log == ["/robots.txt", "/off.png"]  # the target only, not its site
    report = orjson.loads(crawlkit("report", "--state", str(state)).stdout)["collection"]
    assert report["requisites"]["missing"] == 0
    assert not any("from-requisite" in problem for problem in report["problems"])
    by_url = {r["url"]: r for r in fetch_records(state)}
    assert by_url[f"{other}/off.png"]["requisite_hops"] == 1
    assert by_url[f"{root}/css/bg.png"]["requisite_hops"] == 2  # found in the stylesheet


def test_no_requisites_fetches_pages_only(tmp_path, web):
    site = web.hosts_of_kind("requisites")[0]
    state = tmp_path / "state"
    res = crawlkit(*crawl_args(web, state, site["root"], "--no-requisites"), timeout=120)
    assert res.code == 0, res.stderr
    paths = {q["path"] for q in web.requests() if q["host"].startswith(site["name"])}
    assert paths == {"/robots.txt", "/", "/p2.html"}
    assert not [q for q in web.requests() if q["host"].startswith("assets-")]


def test_exclude_and_ignore_file_refuse_with_the_pattern(tmp_path, web):
    site = web.hosts_of_kind("requisites")[0]
    ignore = tmp_path / "ignore.txt"
    ignore.write_text("# media is large\n/media/\n\n")
    state = tmp_path / "state"
    res = crawlkit(
        *crawl_args(web, state, site["root"], "--exclude", r"\.png$", "--ignore-file", str(ignore)),
        timeout=120,
    )
    assert res.code == 0, res.stderr
    asked = requested(web)
    assert not [u for u in asked if u.endswith(".png") or "/media/" in u]
    assert any(u.endswith(".css") for u in asked)  # the rest is there
    by_url = {r["url"]: r for r in refused(state) if r.get("refused") == "excluded"}
    assert by_url[site["root"] + "img/logo.png"]["detail"] == r"--exclude \.png$"
    assert by_url[site["root"] + "media/v.mp4"]["detail"] == f"{ignore}: /media/"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--exclude", "(unclosed"], "--exclude: bad regular expression '(unclosed'"),
        (["--ignore-file", "IGNORE"], "IGNORE:3: bad regular expression '[bad'"),
        (["--ignore-file", "MISSING"], "--ignore-file MISSING: cannot read it"),
    ],
)
def test_bad_patterns_are_usage_errors(tmp_path, args, message):
    ignore = tmp_path / "ignore.txt"
    ignore.write_text("ok\n# fine\n[bad\n")
    subst = {"IGNORE": str(ignore), "MISSING": str(tmp_path / "nope.txt")}
    args = [subst.get(a, a) for a in args]
    message = message.replace("IGNORE", str(ignore)).replace("MISSING", str(tmp_path / "nope.txt"))
    res = crawlkit("crawl", "http://x.test/", "--state", str(tmp_path / "s"), *args)
    assert res.code == 2
    assert res.stderr.startswith(f"crawlkit crawl: {message}")
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()  # refused before touching state


def test_ignore_file_is_read_again_when_it_changes(tmp_path):
    ignore = tmp_path / "ignore.txt"
    ignore.write_text("/a/\n")
    excludes = Excludes(["/never/"], ignore)
    assert excludes.match("http://x.test/a/1") == f"{ignore}: /a/"
    assert excludes.match("http://x.test/b/1") is None
    ignore.write_text("/b/\n")
    os.utime(ignore, ns=(1, 1))  # a change the clock's granularity cannot hide
    excludes.refresh()
    assert excludes.match("http://x.test/a/1") is None
    assert excludes.match("http://x.test/b/1") == f"{ignore}: /b/"
    # a broken edit keeps what was in force, with a warning, and never stops a crawl
    ignore.write_text("[broken\n")
    os.utime(ignore, ns=(2, 2))
    excludes.refresh()
    assert excludes.match("http://x.test/b/1") == f"{ignore}: /b/"
    with pytest.raises(UsageError, match=r"ignore.txt:1: bad regular expression"):
        Excludes([], ignore)


def test_link_policy_rules():
    policy = LinkPolicy(ArchiveOptions(max_requisite_hops=2))
    page = "http://s.test/"
    css = "http://s.test/a.css"
    fetched = {
        page: {"url": page, "reason": "link"},
        css: {"url": css, "reason": "requisite", "requisite_hops": 2},
    }
    records = [
        {"url": "http://cdn.test/x.js", "reason": "requisite", "from": page},
        {"url": "http://other.test/", "reason": "link", "from": page},
        {"url": "http://s.test/b.css", "reason": "requisite", "from": css},
        {"url": "http://s.test/p", "reason": "link", "from": css},
        {"url": "http://cdn.test/moved.js", "reason": "redirect", "via": page, "requisite_hops": 1},
        {"url": "http://s.test/nf", "reason": "link", "from": page, "nofollow": True},
    ]
    ok, no = policy.sort(records, lambda r: "s.test" in r["url"], fetched, "site")
    assert [(r["url"], r.get("requisite_hops")) for r in ok] == [
        ("http://cdn.test/x.js", 1),
        ("http://cdn.test/moved.js", 1),
    ]
    assert [(r["url"], r["refused"]) for r in no] == [
        ("http://other.test/", "out-of-scope"),
        ("http://s.test/b.css", "requisite-depth"),
        ("http://s.test/p", "from-requisite"),
    ]
    off = LinkPolicy(ArchiveOptions(requisites=False))
    ok, no = off.sort(records, lambda r: True, fetched)
    assert [r["url"] for r in ok] == ["http://other.test/"]
    assert [r["refused"] for r in no] == ["from-requisite"]


def test_ignore_robots_for_one_exact_host(tmp_path):
    args = ("--hosts", "1", "--pages", "3", "--special", "robots-rules:2", "--crawl-delay", "0.1s")
    with start_testweb(tmp_path, *args) as web:
        mine, other = web.hosts_of_kind("robots-rules")
        state = tmp_path / "state"
        res = crawlkit(
            "crawl",
            mine["root"],
            other["root"],
            "--state",
            str(state),
            "--scope",
            "any",
            "--no-budgets",
            "--min-delay",
            GAP,
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--ignore-robots-for",
            mine["name"].upper(),
            timeout=180,
        )
        assert res.code == 0, res.stderr
        asked = requested(web)
        audit = crawlkit("audit", "--server-log", str(web.log_path), "--min-gap", GAP, "--json")
        report = orjson.loads(audit.stdout)
    assert mine["disallowed"] and set(mine["disallowed"]) <= asked  # rules set aside here
    assert not set(other["disallowed"]) & asked  # ... and only here
    # only robots rules were set aside: robots.txt came first, gaps and Crawl-delay held
    kinds = {(v["check"], v["host"]) for v in report["violations"]}
    assert kinds == {("disallowed", mine["name"])}, report["violations"][:3]
    from warcio.archiveiterator import ArchiveIterator

    infos = []
    for warc in sorted((state / "warc").glob("*.warc.gz")):
        with open(warc, "rb") as f:
            infos += [
                r.content_stream().read().decode()
                for r in ArchiveIterator(f)
                if r.rec_type == "warcinfo"
            ]
    assert infos and all(f"robots: obey, except for {mine['name']}" in i for i in infos)
    collection = orjson.loads(crawlkit("report", "--state", str(state)).stdout)["collection"]
    assert collection["robots_ignored_for"] == [mine["name"]]


@pytest.mark.parametrize("bad", ["*.example.org", "http://example.org/", "example.org:8080", ""])
def test_ignore_robots_for_takes_one_exact_host(tmp_path, bad):
    res = crawlkit(
        "crawl", "http://x.test/", "--state", str(tmp_path / "s"), "--ignore-robots-for", bad
    )
    assert res.code == 2 and "--ignore-robots-for" in res.stderr
