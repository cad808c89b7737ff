"""`crawlkit archive` of a static site served by nginx and by Apache httpd, run from their
own configurations on loopback (tests/crawl/real_servers.py), with the settings that
make real sites differ from testweb: keep-alive connections the server closes (an idle
timeout, a request limit per connection) while the crawler may be about to reuse them,
gzip, directory redirects, validators on a recrawl, their own 404 pages.

Each crawl is judged from the server's own access log: robots.txt first, every path
asked once, one request at a time with the gap held, and every page in the WARC with
the bytes the server sent. The tests skip, saying why, when a server is not installed
(.ci/run installs both, best effort).
"""

from __future__ import annotations

import itertools
import socket
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import pytest
from conftest import crawlkit
from real_servers import (
    APACHE,
    NGINX,
    Hit,
    Server,
    file_of,
    serve_site,
    served_root,
    site_paths,
)
from warcio.archiveiterator import ArchiveIterator

# The servers' keep-alive timeout, scaled down from real sites' 1-5 s so that a crawl
# of the site with a gap near it takes seconds: the race is the same (the server closes
# an idle connection as the crawler takes it from its pool to send the next request).
KEEPALIVE = 0.3
# The access logs stamp in milliseconds, nginx a request's end as it logs it: a gap
# may look a few milliseconds shorter than it was.
ALLOWANCE = 0.02
_PRESENT = {"nginx": NGINX, "apache": APACHE}
_KEEPALIVE = {
    "nginx": f"keepalive_timeout {KEEPALIVE * 1000:.0f}ms;\n    keepalive_requests 3;",
    "apache": f"KeepAlive On\nKeepAliveTimeout {KEEPALIVE * 1000:.0f}ms\nMaxKeepAliveRequests 3",
}


LIMIT = {"nginx": 3, "apache": 4}


def _need(kind: str) -> None:
    if _PRESENT[kind] is None:
        pytest.skip(f"{kind} is not installed (apt-get install nginx apache2; .ci/run does)")


@pytest.fixture
def site() -> Iterator[Path]:
    with served_root() as root:
        yield root


def _archive(server: Server, out: Path, gap: float, command: str = "archive") -> None:
    """`crawlkit archive` of the site into ``out``, or `crawlkit crawl` with its state
    and WARC files where archive puts them."""
    if command == "archive":
        args = ["archive", f"{server.origin}/", str(out)]
    else:
        args = ["crawl", f"{server.origin}/", "--state", str(out / "state")]
        # (its per-site page budget parks 6 of the site's 37 URLs for a later period)
        args += ["--warc-dir", str(out / "warc"), "--scope", "host", "--no-budgets"]
    args += ["--allow-net", "127.0.0.0/8"]
    # --for: a deferred URL ends the crawl at once (and fails the judging) instead of
    # making it wait for its retry
    args += ["--min-delay", f"{gap}s", "--delay-factor", "0", "--for", "60s"]
    done = crawlkit(*args)
    assert done.code == 0, done.stderr


def fetch_log(out: Path) -> list[dict]:
    return [
        orjson.loads(line)
        for log in sorted(out.glob("state/crawl/cycles/*/fetch.ndjson"))
        for line in log.read_bytes().splitlines()
    ]


def warc_records(out: Path) -> dict[str, tuple[int, bytes]]:
    """Path → (status, body with its content coding undone) of each response record."""
    found: dict[str, tuple[int, bytes]] = {}
    for warc in sorted(out.glob("warc/*.warc.gz")):
        with open(warc, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "response":
                    path = urlsplit(record.rec_headers.get_header("WARC-Target-URI")).path
                    status = int(record.http_headers.get_statuscode())
                    found[path] = (status, record.content_stream().read())
    return found


def judge(server: Server, out: Path, root: Path, gap: float) -> list[Hit]:
    """The crawl of the site as the server saw it and the WARC keeps it."""
    hits = server.hits()
    assert hits and hits[0].path == "/robots.txt", hits[:1]
    asked = Counter(h.path for h in hits)
    assert [p for p, n in asked.items() if n > 1] == [], asked
    assert {h.path: h.status for h in hits} == site_paths()

    # one request at a time, each at least the gap after the last answer
    ordered = sorted(hits, key=lambda h: h.start)
    gaps = [(b.start - a.end, b.path) for a, b in itertools.pairwise(ordered)]
    assert min(gaps)[0] >= gap - ALLOWANCE, sorted(gaps)[:3]

    # nothing failed, nothing waits for a retry
    log = fetch_log(out)
    denied = [urlsplit(r["url"]).path for r in log if r["outcome"] == "robots-denied"]
    assert denied == ["/private/secret.html"]
    troubled = [r for r in log if r["outcome"] not in ("fetched", "redirect", "robots-denied")]
    troubled += [r for r in log if r.get("error") and r["outcome"] != "robots-denied"]
    assert troubled == []

    # every page with the bytes the server sent (the WARC keeps them gzipped as sent)
    archived = warc_records(out)
    for path, status in site_paths().items():
        assert archived[path][0] == status, path
        if status == 200:
            assert archived[path][1] == file_of(root, path).read_bytes(), path
    assert b"404 Not Found" in archived["/gone.html"][1]  # the server's own error page
    return hits


@pytest.mark.parametrize("kind", ["nginx", "apache"])
@pytest.mark.parametrize("ratio", [0.9, 1.0, 1.1], ids=["under", "at", "over"])
def test_archive_while_the_server_closes_kept_alive_connections(
    tmp_path: Path, site: Path, kind: str, ratio: float
) -> None:
    """The server closes a connection idle for KEEPALIVE and after its third request;
    the crawler's gap is just under or just over KEEPALIVE. A request that went out on
    a connection the server was closing is sent again on a new one: no page lost, none
    deferred, none asked twice."""
    _need(kind)
    gap = round(KEEPALIVE * ratio, 3)
    with serve_site(kind, site, tmp_path / kind, _KEEPALIVE[kind]) as server:
        _archive(server, tmp_path / "coll", gap)
        hits = judge(server, tmp_path / "coll", site, gap)
        # the server did close connections under the crawl: nginx after 3 requests,
        # Apache after 4 (MaxKeepAliveRequests counts the requests after the first)
        per_conn = Counter(h.conn for h in hits)
        assert max(per_conn.values()) <= LIMIT[kind]
        assert server.error_log().count("[emerg]") == 0


def _location(out: Path, path: str) -> str | None:
    """The Location of the response archived for ``path``."""
    for warc in sorted(out.glob("warc/*.warc.gz")):
        with open(warc, "rb") as f:
            for record in ArchiveIterator(f):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                if record.rec_type == "response" and urlsplit(uri).path == path:
                    return record.http_headers.get_header("Location")
    return None


@pytest.mark.parametrize(
    ("kind", "settings", "location", "command"),
    [
        ("nginx", "absolute_redirect on;", "{origin}/docs/", "archive"),
        ("nginx", "absolute_redirect off;", "/docs/", "crawl"),
        ("apache", "", "{origin}/docs/", "crawl"),
    ],
    ids=["nginx-absolute", "nginx-relative", "apache"],
)
def test_a_directory_linked_without_its_slash(
    tmp_path: Path, site: Path, kind: str, settings: str, location: str, command: str
) -> None:
    """/docs is answered with the server's own 301 to /docs/ (nginx: absolute or, with
    absolute_redirect off, relative; Apache: absolute with the port); the crawl follows
    it once, and the whole site is archived as the servers sent it, by `crawlkit archive`
    and by `crawlkit crawl`."""
    _need(kind)
    with serve_site(kind, site, tmp_path / kind, settings) as server:
        _archive(server, tmp_path / "coll", 0.05, command)
        judge(server, tmp_path / "coll", site, 0.05)
        assert _location(tmp_path / "coll", "/docs") == location.format(origin=server.origin)


def test_an_nginx_redirect_without_its_port(tmp_path: Path, site: Path) -> None:
    """nginx with port_in_redirect off (as behind a load balancer on port 80) sends
    /docs to http://127.0.0.1/docs/, port 80, where nothing listens: the 301 is
    archived as sent, its target waits for a retry as a host whose robots.txt cannot
    be had, and the rest of the site is archived."""
    _need("nginx")
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", 80)) == 0:
            pytest.skip("something listens on 127.0.0.1:80")
    with serve_site("nginx", site, tmp_path / "nginx", "port_in_redirect off;") as server:
        _archive(server, tmp_path / "coll", 0.05)
        hits = server.hits()
    out = tmp_path / "coll"
    assert _location(out, "/docs") == "http://127.0.0.1/docs/"
    unreached = {"/docs/", "/docs/guide.html"}
    assert {h.path: h.status for h in hits} == {
        p: s for p, s in site_paths().items() if p not in unreached
    }
    [waiting] = [r for r in fetch_log(out) if r["outcome"] == "deferred"]
    assert waiting["url"] == "http://127.0.0.1/docs/"
    assert waiting["error"].startswith("robots.txt unavailable")


def _fetch(state: Path, records: list[dict], log: Path) -> list[dict]:
    batch = log.with_suffix(".in.ndjson")
    batch.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    done = crawlkit(
        *("fetch", "--state", str(state), "--allow-net", "127.0.0.0/8", "--min-delay", "0.05s"),
        *("--log", str(log), str(batch)),
    )
    assert done.code == 0, done.stderr
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


@pytest.mark.parametrize(
    ("kind", "settings"),
    [("nginx", ""), ("nginx", "etag off;"), ("apache", ""), ("apache", "FileETag None")],
    ids=["nginx", "nginx-no-etag", "apache", "apache-no-etag"],
)
def test_a_recrawl_gets_304s_archived_as_revisits(
    tmp_path: Path, site: Path, kind: str, settings: str
) -> None:
    """The pages fetched again with the validators the server sent (ETag, Last-Modified,
    as `crawlkit recrawl` passes them on; with ETags off, Last-Modified alone): the
    server answers 304 to each, gzipped pages too, and each is archived as a revisit of
    the capture it repeats."""
    _need(kind)
    pages = [p for p, status in site_paths().items() if status == 200 and p != "/robots.txt"]
    state = tmp_path / "state"
    with serve_site(kind, site, tmp_path / kind, settings) as server:
        urls = [{"url": f"{server.origin}{p}"} for p in pages]
        first = _fetch(state, urls, tmp_path / "first.ndjson")
        assert {r["status"] for r in first} == {200}
        due = [
            {"url": r["url"], "reason": "recrawl", "etag": r["etag"]}
            | {"last_modified": r["last_modified"], "digest": r["digest"]}
            for r in first
        ]
        asked_before = len(server.hits())
        second = _fetch(state, due, tmp_path / "second.ndjson")
        again = [h for h in server.hits()[asked_before:] if h.path != "/robots.txt"]
    assert sorted(h.path for h in again) == sorted(pages)
    validator = "if_modified_since" if "etag" in settings.lower() else "if_none_match"
    assert all(getattr(h, validator) not in ("", "-") for h in again), again
    assert {h.path: h.status for h in again} == dict.fromkeys(pages, 304)
    assert {r["outcome"] for r in second} == {"not-modified"}
    revisits = set()
    for warc in sorted(state.glob("warc/**/*.warc.gz")):
        with open(warc, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "revisit":
                    assert record.rec_headers["WARC-Profile"].endswith("/server-not-modified")
                    revisits.add(urlsplit(record.rec_headers["WARC-Target-URI"]).path)
    assert revisits == set(pages)


@pytest.mark.parametrize("kind", ["nginx", "apache"])
def test_a_port_taken_before_the_server_binds_it_is_tried_again(
    tmp_path: Path, site: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """free_port's port is free only until someone binds it (another test's server,
    under xdist): a server that finds it taken is started on another port, its site
    written for that one, so a collision is no failed test."""
    _need(kind)
    import real_servers

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    fresh = real_servers.free_port
    monkeypatch.setattr(real_servers, "free_port", lambda: next(ports, None) or fresh())
    try:
        with serve_site(kind, site, tmp_path / kind, "") as server:
            assert server.port != taken.getsockname()[1]
            robots = (site / "robots.txt").read_text()
            assert f"Sitemap: {server.origin}/sitemap.xml" in robots  # the port it is on
            with socket.create_connection(("127.0.0.1", server.port), timeout=5):
                pass
    finally:
        taken.close()
