"""`crawlkit archive URL OUT` on a two-host site (pages, requisites on a "CDN" host):
every page and reachable requisite captured once, politely by the server's log, and
the WARC files say how they were made (warcinfo, metadata, resource records) with no
secret in them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
from conftest import crawlkit, start_testweb
from warcio.archiveiterator import ArchiveIterator

GAP = "0.05s"
LOG_URI = "urn:crawlkit:crawl-log.ndjson"
HEADER_SECRET = "SEKRET-HEADER-7f3a"
COOKIE_SECRET = "SEKRET-COOKIE-91bc"


def _records(warc: Path) -> list:
    out = []
    with open(warc, "rb") as f:
        for r in ArchiveIterator(f):
            body = r.content_stream().read()
            out.append((r.rec_type, r.rec_headers, body))
    return out


def _warcs(out: Path) -> list[Path]:
    return sorted(out.glob("warc/*.warc.gz"))


def test_archive_a_site_once_politely_with_provenance(tmp_path: Path) -> None:
    cookies = tmp_path / "cookies.txt"
    with start_testweb(tmp_path, "--hosts", "1", "--pages", "3", "--special", "requisites") as web:
        site = web.hosts_of_kind("requisites")[0]
        host = site["name"]
        cookies.write_text(f"{host}\tFALSE\t/\tFALSE\t0\tsid\t{COOKIE_SECRET}\n")
        out = tmp_path / "coll"
        args = [
            "archive",
            site["root"],
            str(out),
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--min-delay",
            GAP,
            "--header",
            f"Authorization: Bearer {HEADER_SECRET}",
            "--cookies",
            str(cookies),
            "--warc-prefix",
            "coll",
            *("--operator", "Tester", "--description", "A test archive"),
        ]
        first = crawlkit(*args)
        assert first.code == 0, first.stderr
        again = crawlkit(*args)  # resumed: nothing left, nothing fetched again
        assert again.code == 0, again.stderr
        web.flush()
        requests = web.requests()
        audit = crawlkit("audit", "--server-log", str(web.log_path), "--min-gap", GAP, "--json")
        needed = {u for urls in site["notes"]["requisites"].values() for u in urls}
        wanted = needed | set(site["pages"])
    assert orjson.loads(audit.stdout)["ok"], audit.stdout[:2000]
    asked = Counter(f"{q['host']}{q['path']}" for q in requests)
    assert [k for k, n in asked.items() if n > 1] == []  # 0 fetched twice, over two runs
    warcs = _warcs(out)
    assert len(warcs) >= 3 and all(w.name.startswith("coll-") for w in warcs)  # provenance too
    captured: set[str] = set()
    by_file = {w.name: _records(w) for w in warcs}
    for recs in by_file.values():
        captured |= {
            h.get_header("WARC-Target-URI") for t, h, _ in recs if t in ("response", "revisit")
        }
    assert wanted - captured == set()
    for warc in warcs:  # every WARC file passes warcio's own check
        check = subprocess.run(
            [str(Path(sys.executable).parent / "warcio"), "check", str(warc)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert check.returncode == 0, check.stdout + check.stderr

    # warcinfo: the effective settings and the command line
    crawl_file = by_file[warcs[0].name]
    info_type, _, info = crawl_file[0]
    assert info_type == "warcinfo"
    fields = dict(line.split(": ", 1) for line in info.decode().split("\r\n") if ": " in line)
    assert fields["command-line"].startswith(f"crawlkit archive {site['root']} ")
    assert fields["robots"] == "obey" and fields["http-header-user-agent"]
    settings = json.loads(fields["crawlkit-settings"])
    assert settings["scope"] == "site" and settings["budgets"] is False
    assert settings["fetch"]["min_delay"] == 0.05
    # ... in every file, the crawl log's and report's too (they had none of them)
    for name, recs in by_file.items():
        info_type, _, info = recs[0]
        assert info_type == "warcinfo", name
        each = dict(line.split(": ", 1) for line in info.decode().split("\r\n") if ": " in line)
        assert json.loads(each["crawlkit-settings"]) == settings, name
        assert each["robots"] == "obey" and each["operator"] == "Tester", name
        assert each["description"].startswith("A test archive"), name

    # each capture's metadata record says how it was reached
    meta = {
        h.get_header("WARC-Target-URI"): body.decode()
        for recs in by_file.values()
        for t, h, body in recs
        if t == "metadata" and h.get_header("WARC-Concurrent-To")
    }
    requisite = sorted(needed & set(meta))[0]
    assert "reason: requisite" in meta[requisite]
    assert "\r\nvia: http" in meta[requisite]
    assert "reason: seed" in meta[site["root"]]

    # the last files of the runs hold outlinks, the crawl log and the report
    last = by_file[warcs[-1].name]
    resources = {h.get_header("WARC-Target-URI"): body for t, h, body in last if t == "resource"}
    assert set(resources) == {"urn:crawlkit:crawl-log.ndjson", "urn:crawlkit:report.json"}
    assert orjson.loads(resources["urn:crawlkit:report.json"])["collection"]["seeds"] == [
        site["root"]
    ]
    all_resources = [
        (h.get_header("WARC-Target-URI"), body)
        for recs in by_file.values()
        for t, h, body in recs
        if t == "resource"
    ]
    logged = [
        json.loads(line)["url"]
        for uri, body in all_resources
        if uri.endswith("crawl-log.ndjson")
        for line in body.decode().splitlines()
    ]
    assert len(logged) == len(set(logged)) and site["root"] in logged  # each cycle once
    outlinks = [
        (h.get_header("WARC-Target-URI"), h.get_header("WARC-Refers-To"), body.decode())
        for recs in by_file.values()
        for t, h, body in recs
        if t == "metadata" and h.get_header("WARC-Refers-To")
    ]
    roots = [o for o in outlinks if o[0] == site["root"]]
    assert len(roots) == 1  # written once, though the collection was packaged twice
    response_ids = {
        h.get_header("WARC-Record-ID")
        for recs in by_file.values()
        for t, h, _ in recs
        if t == "response"
    }
    assert roots[0][1] in response_ids
    assert "outlink: " in roots[0][2] and " E " in roots[0][2]

    # secrets: only in the request records, which are what was sent
    for recs in by_file.values():
        for t, h, body in recs:
            if t == "request":
                continue
            text = str(h) + body.decode("utf-8", "replace")
            assert HEADER_SECRET not in text and COOKIE_SECRET not in text, (t, text[:300])
    for path in (
        out / "report.json",
        out / "report.html",
        out / "state" / "crawl" / "settings.json",
    ):
        text = path.read_text()
        assert HEADER_SECRET not in text and COOKIE_SECRET not in text, path
    assert f"{len(warcs)} WARC files in {out}/warc" in again.stderr.splitlines()[-1]
    assert (out / "collection.wacz").exists()


def test_archive_refuses_state_and_warc_dir(tmp_path: Path) -> None:
    res = crawlkit("archive", "http://x.test/", str(tmp_path / "c"), "--state", "elsewhere")
    assert res.code == 2
    assert "--state: the collection's is OUT/state, OUT/warc" in res.stderr


def test_archive_with_workers_writes_the_crawl_log_and_outlinks(tmp_path: Path) -> None:
    """`archive --workers 2` wrote an empty crawl log and no outlink record: the
    provenance was read from STATE/crawl/cycles, and a crawl of workers keeps its
    cycles in each worker's state."""
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "4", "--special", "none") as web:
        seed = web.seeds.read_text().split()[0]
        out = tmp_path / "coll"
        res = crawlkit(
            "archive",
            seed,
            str(out),
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--min-delay",
            GAP,
            "--workers",
            "2",
        )
        assert res.code == 0, res.stderr
    records = [r for warc in _warcs(out) for r in _records(warc)]
    fetched = {h.get_header("WARC-Target-URI") for t, h, _ in records if t == "response"}
    fetched = {url for url in fetched if not url.endswith("/robots.txt")}  # not in the log
    (log,) = [body for t, h, body in records if h.get_header("WARC-Target-URI") == LOG_URI]
    logged = {json.loads(line)["url"] for line in log.decode().splitlines()}
    assert fetched and fetched <= logged
    outlinks = [h for t, h, _ in records if t == "metadata" and h.get_header("WARC-Refers-To")]
    assert seed in {h.get_header("WARC-Target-URI") for h in outlinks}


def test_an_archive_fetches_and_stores_each_url_as_the_page_links_it(tmp_path: Path) -> None:
    """The crawl's default URL rules sort a query and drop tracking parameters: an
    archive asked for /list?page=2&q=x where the page links /list?q=x&page=2, and a
    replay of the link found no capture (ReplayWeb.page: "Archived Page Not Found").
    An archive's rules are safe (URLs as linked); a search crawl keeps the default."""
    from conftest import serve_routes

    links = b'<a href="list.html?q=x&amp;page=2">l</a> '
    links += b'<a href="promo.html?id=3&amp;utm_source=rss">p</a>'
    routes = {
        "/": ("text/html", b"<html><body>" + links + b"</body></html>"),
        "/list.html?q=x&page=2": ("text/html", b"<p>list</p>"),
        "/promo.html?id=3&utm_source=rss": ("text/html", b"<p>promo</p>"),
        "/list.html?page=2&q=x": ("text/html", b"<p>list</p>"),
        "/promo.html?id=3": ("text/html", b"<p>promo</p>"),
    }
    with serve_routes(routes) as (root, log):
        net = ("--allow-net", "127.0.0.0/8", "--min-delay", "0.05s")
        out = tmp_path / "coll"
        res = crawlkit("archive", f"{root}/", str(out), *net, "--for", "30s", timeout=180)
        assert res.code == 0, res.stderr
        archived = sorted(p for p in log if p not in ("/robots.txt", "/"))
        log.clear()
        crawl = crawlkit("crawl", f"{root}/", "--state", str(tmp_path / "s"), *net, timeout=120)
        assert crawl.code == 0, crawl.stderr
        crawled = sorted(p for p in log if p not in ("/robots.txt", "/"))
    assert archived == ["/list.html?q=x&page=2", "/promo.html?id=3&utm_source=rss"]
    assert crawled == ["/list.html?page=2&q=x", "/promo.html?id=3"]
    uris = {head.get_header("WARC-Target-URI") for w in _warcs(out) for _, head, _ in _records(w)}
    assert f"{root}/list.html?q=x&page=2" in uris and f"{root}/list.html?page=2&q=x" not in uris
    again = crawlkit("crawl", f"{root}/", "--state", str(out / "state"), *net, "--for", "2s")
    assert "URL rules 'safe' of the running crawl kept (not 'default')" in again.stderr
