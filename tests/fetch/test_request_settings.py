"""--header, --cookies, --netrc: what is sent where (read back from the WARC request
records the fetcher wrote), and malformed files named by line."""

from __future__ import annotations

import json

import pytest
from conftest import crawlkit, start_testweb
from warcio.archiveiterator import ArchiveIterator

from crawlkit.errors import UsageError
from crawlkit.fetch.request_settings import (
    RequestSettings,
    parse_header,
    read_cookies,
    read_netrc,
)

COOKIES = """\
# Netscape HTTP Cookie File
.site.test\tTRUE\t/\tFALSE\t0\tsession\tabc123
#HttpOnly_site.test\tFALSE\t/private\tFALSE\t0\tdeep\tx
site.test\tFALSE\t/\tTRUE\t0\tsecure\ts
site.test\tFALSE\t/\tFALSE\t1\told\tgone
"""


def test_cookie_matching(tmp_path):
    path = tmp_path / "cookies.txt"
    path.write_text(COOKIES)
    settings = RequestSettings(cookies=read_cookies(path), clock=lambda: 1_800_000_000)
    assert settings.for_url("http://site.test/")["Cookie"] == "session=abc123"
    assert settings.for_url("http://www.site.test/a")["Cookie"] == "session=abc123"
    assert settings.for_url("https://site.test/private/x")["Cookie"] == (
        "deep=x; session=abc123; secure=s"
    )
    assert "Cookie" not in settings.for_url("http://othersite.test/")
    assert "Cookie" not in settings.for_url("http://notsite.test/")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("site.test\tTRUE\t/\tFALSE\t0\tname", "7 tab-separated fields"),
        ("site.test\tyes\t/\tFALSE\t0\tn\tv", "TRUE or FALSE"),
        ("site.test\tTRUE\t/\tFALSE\tsoon\tn\tv", "expiry is seconds"),
        ("site.test\tTRUE\t/\tFALSE\t0\tbad name\tv", "a cookie needs"),
    ],
)
def test_malformed_cookies_name_the_line(tmp_path, line, message):
    path = tmp_path / "cookies.txt"
    path.write_text(f"# header\n\n{line}\n")
    with pytest.raises(UsageError, match=rf"cookies.txt:3: .*{message}"):
        read_cookies(path)


def test_netrc_basic_auth_only_for_named_hosts(tmp_path):
    path = tmp_path / "netrc"
    path.write_text("machine site.test login me password s3cret\ndefault login x password y\n")
    path.chmod(0o600)
    settings = RequestSettings(credentials=read_netrc(path))
    assert settings.for_url("http://site.test/a")["Authorization"] == "Basic bWU6czNjcmV0"
    assert "Authorization" not in settings.for_url("http://other.test/")
    assert "s3cret" not in json.dumps(settings.to_json()) and "s3cret" not in repr(settings)
    bad = tmp_path / "bad-netrc"
    bad.write_text("machine a.test login me password x\nbogus b.test\n")
    bad.chmod(0o600)
    with pytest.raises(UsageError, match=r"bad-netrc:2: bad follower token .bogus."):
        read_netrc(bad)


@pytest.mark.parametrize("bad", ["NoColon", "Bad Name: x", ": value", "X: a\x01b"])
def test_bad_header_is_a_usage_error(tmp_path, bad):
    with pytest.raises(UsageError):
        parse_header(bad)
    res = crawlkit("crawl", "http://x.test/", "--state", str(tmp_path / "s"), "--header", bad)
    assert res.code == 2 and res.stderr.startswith("crawlkit crawl: --header")


def test_headers_cookies_and_auth_go_where_they_belong(tmp_path):
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "3", "--special", "none") as web:
        h0, h1 = "h0.test", "h1.test"
        cookies = tmp_path / "cookies.txt"
        cookies.write_text(f"{h0}\tFALSE\t/\tFALSE\t0\tsid\tc00k1e\n")
        netrc = tmp_path / "netrc"
        netrc.write_text(f"machine {h1} login arch password pw\n")
        netrc.chmod(0o600)
        config = tmp_path / "c.toml"
        config.write_text(f'[hosts."{h1}"]\nheaders = {{ "X-Only-H1" = "yes" }}\n')
        state = tmp_path / "state"
        res = crawlkit(
            "crawl",
            web.url(h0),
            web.url(h1),
            "--state",
            str(state),
            "--scope",
            "host",
            "--min-delay",
            "0.05s",
            "--max-pages",
            "6",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--header",
            "X-Archive: test run",
            "--cookies",
            str(cookies),
            "--netrc",
            str(netrc),
            "--config",
            str(config),
            timeout=180,
        )
        assert res.code == 0, res.stderr
    sent: dict[str, list[str]] = {}
    for warc in sorted((state / "warc").glob("*.warc.gz")):
        with open(warc, "rb") as f:
            for rec in ArchiveIterator(f):
                if rec.rec_type == "request" and not rec.rec_headers.get_header(
                    "WARC-Target-URI"
                ).endswith("/robots.txt"):
                    head = rec.http_headers.to_str()
                    host = rec.rec_headers.get_header("WARC-Target-URI").split("/")[2]
                    sent.setdefault(host.split(":")[0], []).append(head)
    assert sent[h0] and sent[h1]
    for head in sent[h0]:
        assert "X-Archive: test run" in head and "Cookie: sid=c00k1e" in head
        assert "Authorization" not in head and "X-Only-H1" not in head
    for head in sent[h1]:
        assert "X-Archive: test run" in head and "X-Only-H1: yes" in head
        assert "Authorization: Basic YXJjaDpwdw==" in head and "Cookie" not in head
    settings = (state / "crawl" / "settings.json").read_text()
    assert (
        "c00k1e" not in settings
        and "YXJjaDpwdw" not in settings
        and "pw" not in json.loads(settings)["settings"]["fetch"]["request"]["basic_auth_hosts"]
    )


def test_proxy_carries_every_request_and_targets_are_still_checked(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    with start_testweb(tmp_path, "--hosts", "1", "--pages", "4", "--special", "private") as web:
        log = tmp_path / "proxy.log"
        proxy = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "tests" / "tools" / "forward_proxy.py"),
                str(web.hosts_file),
                str(log),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proxy.stdout is not None
            port = int(proxy.stdout.readline())
            gateway = web.hosts_of_kind("gateway")[0]
            state = tmp_path / "state"
            res = crawlkit(
                "crawl",
                web.url("h0.test"),
                gateway["root"],
                "--state",
                str(state),
                "--scope",
                "any",
                "--min-delay",
                "0.05s",
                "--json",
                "--allow-net",
                web.info["allow_net"],
                "--hosts-file",
                str(web.hosts_file),
                "--proxy",
                f"http://127.0.0.1:{port}",
                timeout=180,
            )
            assert res.code == 0, res.stderr
        finally:
            proxy.terminate()
            proxy.wait(timeout=10)
            if proxy.stdout:
                proxy.stdout.close()
        served = {f"http://{q['host']}:{q['port']}{q['path']}" for q in web.requests()}
    through = set(log.read_text().splitlines())
    assert served and served <= through  # everything the web served came through the proxy
    assert web.host("h0.test")["pages"][0] in through
    # the private host behind the gateway is refused before any request, proxy or not
    assert not [u for u in through if "private-" in u]
    fetches = [
        json.loads(line)
        for p in sorted(state.glob("crawl/cycles/*/fetch.ndjson"))
        for line in p.read_text().splitlines()
    ]
    private = [r for r in fetches if "private-0.test" in r["url"]]
    assert private and all(r["outcome"] == "refused" for r in private)


def test_bad_proxy_is_a_usage_error(tmp_path):
    res = crawlkit(
        "crawl",
        "http://x.test/",
        "--state",
        str(tmp_path / "s"),
        "--proxy",
        "socks5://127.0.0.1:1080",
    )
    assert res.code == 2 and "--proxy" in res.stderr


@pytest.mark.parametrize("trust", [True, False])
def test_proxy_from_the_environment_only_with_trust_env(tmp_path, trust):
    import os
    import subprocess
    import sys

    from conftest import ROOT

    with start_testweb(tmp_path, "--hosts", "1", "--pages", "3", "--special", "none") as web:
        log = tmp_path / "proxy.log"
        log.touch()
        proxy = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "tests" / "tools" / "forward_proxy.py"),
                str(web.hosts_file),
                str(log),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proxy.stdout is not None
            port = int(proxy.stdout.readline())
            env = {**os.environ, "HTTP_PROXY": f"http://127.0.0.1:{port}", "NO_PROXY": ""}
            args = [
                sys.executable,
                "-m",
                "crawlkit",
                "crawl",
                web.url("h0.test"),
                "--state",
                str(tmp_path / "state"),
                "--min-delay",
                "0.05s",
                "--allow-net",
                web.info["allow_net"],
                "--hosts-file",
                str(web.hosts_file),
                *(["--trust-env"] if trust else []),
            ]
            done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=180)
            assert done.returncode == 0, done.stderr
        finally:
            proxy.terminate()
            proxy.wait(timeout=10)
            if proxy.stdout:
                proxy.stdout.close()
        served = {f"http://{q['host']}:{q['port']}{q['path']}" for q in web.requests()}
    through = set(log.read_text().splitlines())
    assert served
    assert (served <= through) if trust else not through


def test_set_cookie_parsing():
    from crawlkit.fetch.request_settings import parse_set_cookie

    now = 1_800_000_000
    c = parse_set_cookie(
        "sid=1; Path=/app; Max-Age=60; Secure; HttpOnly", "https://a.site.test/x", now
    )
    assert c is not None and (c.domain, c.subdomains, c.path, c.secure, c.expires) == (
        "a.site.test",
        False,
        "/app",
        True,
        now + 60,
    )
    c = parse_set_cookie("t=2; Domain=.site.test", "http://a.site.test/d/e/page", now)
    assert c is not None and (c.domain, c.subdomains, c.path) == ("site.test", True, "/d/e")
    assert parse_set_cookie("t=2; Domain=other.test", "http://a.site.test/", now) is None
    assert parse_set_cookie("no-equals-sign", "http://a.site.test/", now) is None
    c = parse_set_cookie("old=1; Expires=Thu, 01 Jan 1970 00:00:10 GMT", "http://s.test/", now)
    assert c is not None and c.expires == 10
    c = parse_set_cookie("gone=1; Max-Age=0", "http://s.test/", now)
    assert c is not None and c.expires == 1  # expired: never sent
    settings = RequestSettings(keep_cookies=True, clock=lambda: now)
    settings.note_response(
        "http://s.test/", [("Set-Cookie", "gone=1; Max-Age=0"), ("Set-Cookie", "a=b")]
    )
    assert settings.for_url("http://s.test/x")["Cookie"] == "a=b"
    assert "Cookie" not in RequestSettings(clock=lambda: now).for_url("http://s.test/")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_cookies_a_site_sets_are_sent_back_and_kept_for_the_next_run(tmp_path, workers):
    # With --workers 2 each worker keeps the cookies of its own sites in its own state
    # (STATE/workers/K/crawl/cookies.txt), and its next run sends them: the parent read
    # STATE/crawl/cookies.txt, which no worker writes, and the next run sent none.
    import http.server
    import threading

    seen: list[str | None] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("Cookie"))
            body = b"<a href='/next'>next</a>" if self.path == "/" else b"<p>done</p>"
            self.send_response(200 if self.path in ("/", "/next") else 404)
            if self.path == "/":
                self.send_header("Set-Cookie", "visit=1; Path=/; Max-Age=3600")
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        cookies = tmp_path / "cookies.txt"
        cookies.write_text("# none yet\n")
        state = tmp_path / "state"
        common = [
            "--state",
            str(state),
            "--min-delay",
            "0.05s",
            "--allow-net",
            "127.0.0.1/32",
            "--cookies",
            str(cookies),
            "--workers",
            workers,
        ]
        res = crawlkit("crawl", base, *common, timeout=120)
        assert res.code == 0, res.stderr
        first = list(seen)
        res = crawlkit("crawl", base + "again", *common, timeout=120)
        assert res.code == 0, res.stderr
    finally:
        server.shutdown()
        server.server_close()
    # /robots.txt, /, /next: the cookie set by / comes back with /next
    assert first[0] is None and first[-1] == "visit=1"
    jars = [p.read_text() for p in state.glob("**/crawl/cookies.txt")]
    assert sum("\tvisit\t1" in jar for jar in jars) == 1
    assert seen[-1] == "visit=1"  # the next run sends the kept cookie from its first page


@pytest.mark.parametrize(
    "name", ["User-Agent", "user-agent", "Host", "Content-Length", "Connection"]
)
def test_a_header_the_fetcher_owns_is_refused(tmp_path, name):
    """--header 'User-Agent: MyBot/2.0' was sent while robots.txt was matched for
    --agent: a site's 'User-agent: mybot / Disallow: /' was fetched through (a helper's
    server saw 14 pages as MyBot/2.0). Host sent another name than the URL's."""
    with pytest.raises(UsageError, match=f"{name} cannot be set here"):
        parse_header(f"{name}: x")
    res = crawlkit(
        "crawl",
        "http://a.test/",
        "--state",
        str(tmp_path / "s"),
        "--explain",
        "--header",
        f"{name}: x",
    )
    assert res.code == 2
    [line] = res.stderr.strip().splitlines()
    assert "cannot be set here" in line
    assert parse_header("X-Archive: test run") == ("X-Archive", "test run")
