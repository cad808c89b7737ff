"""The cookie jar against cookies a hostile site sets (issue 25, items 2-4): control
characters in any field, Domain attributes that name a public suffix or another IP
address, and a site that sets thousands of cookies."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import crawlkit

from crawlkit.errors import UsageError
from crawlkit.fetch.request_settings import (
    Cookie,
    RequestSettings,
    parse_set_cookie,
    read_cookies,
)

NOW = 1_800_000_000


def jar() -> RequestSettings:
    return RequestSettings(keep_cookies=True, clock=lambda: NOW)


@pytest.mark.parametrize(
    "header",
    [
        "tabv=a\tb; Path=/",
        "t=1; Path=/a\tb",
        "t=1; Path=/a\x85b",  # NEL: str.splitlines() would cut the saved line here
        "t\x01=1",
        "t=a\x7fb",
        "t=1; Domain=si\x01te.test",
        "t=1; Path=/a\x1fb",
        "t=1; Path=/\x00",
    ],
)
def test_control_characters_in_any_field_are_refused(header):
    assert parse_set_cookie(header, "http://site.test/", NOW) is None
    settings = jar()
    settings.note_response("http://site.test/", [("Set-Cookie", header)])
    assert "Cookie" not in settings.for_url("http://site.test/a/b")


def test_every_kept_cookie_reads_back(tmp_path):
    settings = jar()
    settings.note_response(
        "http://site.test/dir/page",
        [("Set-Cookie", "a=1; Path=/x y"), ("Set-Cookie", "b=c=d; Path=/")],
    )
    saved = tmp_path / "cookies.txt"
    settings.save(saved)
    assert {(c.name, c.value, c.path) for c in read_cookies(saved)} == {
        ("a", "1", "/x y"),
        ("b", "c=d", "/"),
    }
    assert saved.stat().st_mode & 0o777 == 0o600  # cookies are secrets (invariant 9)


def test_a_bad_line_of_the_crawls_own_jar_is_skipped_with_a_warning(tmp_path):
    saved = tmp_path / "cookies.txt"
    saved.write_text(
        "# Netscape HTTP Cookie File\n"
        "site.test\tFALSE\t/\tFALSE\t0\ttabv\ta\tb\n"
        "site.test\tFALSE\t/\tFALSE\t0\tgood\t1\n"
        ".co.uk\tTRUE\t/\tFALSE\t0\tsuper\t1\n"
    )
    warnings: list[str] = []
    cookies = read_cookies(saved, on_bad=warnings.append)
    assert [c.name for c in cookies] == ["good"]
    assert len(warnings) == 2
    assert warnings[0].startswith(f"{saved}:2: ") and "7 tab-separated fields" in warnings[0]
    assert warnings[1].startswith(f"{saved}:4: ") and "public suffix" in warnings[1]
    with pytest.raises(UsageError, match=r"cookies.txt:2: "):
        read_cookies(saved)  # an operator's own --cookies file stays strict


@pytest.mark.parametrize(
    ("url", "header", "victim"),
    [
        ("http://cookietab.test/", "d=1; Domain=test", "http://authr.test/"),
        ("http://evil.co.uk/", "d=1; Domain=co.uk", "http://bank.co.uk/"),
        ("http://evil.co.uk/", "d=1; Domain=.CO.UK", "http://bank.co.uk/"),
        ("http://evil.github.io/", "d=1; Domain=github.io", "http://victim.github.io/"),
        ("http://127.0.12.3/", "d=1; Domain=0.12.3", "http://10.0.12.3/"),
        ("http://127.0.12.3/", "d=1; Domain=.0.12.3", "http://10.0.12.3/"),
        ("http://[::1]/", "d=1; Domain=1", "http://[2001:db8::1]/"),
        ("http://a.site.test/", "d=1; Domain=b.site.test", "http://b.site.test/"),
    ],
)
def test_a_domain_attribute_cannot_reach_other_sites(url, header, victim):
    settings = jar()
    settings.note_response(url, [("Set-Cookie", header)])
    assert "Cookie" not in settings.for_url(victim)


def test_host_only_when_the_domain_is_the_host_itself():
    # RFC 6265 5.3 step 5: a public suffix equal to the host makes a host-only cookie;
    # an IP host's own address likewise (never a "subdomain" of an address).
    for url, header, other in [
        ("http://co.uk/", "d=1; Domain=co.uk", "http://bank.co.uk/"),
        ("http://127.0.12.3/", "d=1; Domain=127.0.12.3", "http://1.127.0.12.3/"),
    ]:
        settings = jar()
        settings.note_response(url, [("Set-Cookie", header)])
        assert settings.for_url(url)["Cookie"] == "d=1"
        assert "Cookie" not in settings.for_url(other)
    # a cookies.txt line for an address with the subdomain flag matches that address only
    cookie = Cookie("0.12.3", True, "/", False, 0, "n", "v")
    assert not cookie.matches("http", "127.0.12.3", "/", NOW)
    assert Cookie("127.0.12.3", True, "/", False, 0, "n", "v").matches(
        "http", "127.0.12.3", "/", NOW
    )
    # a registrable domain still covers its subdomains
    settings = jar()
    settings.note_response("http://a.site.test/", [("Set-Cookie", "d=1; Domain=site.test")])
    assert settings.for_url("http://b.site.test/")["Cookie"] == "d=1"


def _set_many(settings: RequestSettings, hosts: int, per_host: int) -> None:
    for h in range(hosts):
        url = f"http://h{h}.site{h}.test/"
        settings.note_response(url, [("Set-Cookie", f"c{i}=v") for i in range(per_host)])


def test_the_jar_keeps_at_most_180_cookies_a_domain_and_3000_in_all(tmp_path):
    settings = jar()
    for page in range(5):  # 90 new cookies on each of 5 pages of one host
        settings.note_response(
            "http://flood.test/",
            [("Set-Cookie", f"p{page}n{i}=v") for i in range(90)],
        )
    sent = settings.for_url("http://flood.test/").get("Cookie", "").split("; ")
    assert len(sent) == 180
    assert "p4n89=v" in sent and "p0n0=v" not in sent  # the oldest go first
    _set_many(settings, hosts=40, per_host=100)
    assert len(settings.site_cookies) == 3000
    assert "Cookie" in settings.for_url("http://h39.site39.test/")  # the newest are kept
    saved = tmp_path / "cookies.txt"
    settings.save(saved)
    assert len(read_cookies(saved)) == 3000


def test_a_request_looks_only_at_its_own_domains(monkeypatch):
    settings = jar()
    _set_many(settings, hosts=29, per_host=100)
    calls = 0
    plain = Cookie.matches

    def counting(self: Cookie, *args: object) -> bool:
        nonlocal calls
        calls += 1
        return plain(self, *args)

    monkeypatch.setattr(Cookie, "matches", counting)
    assert settings.for_url("http://h3.site3.test/")["Cookie"].count("=") == 100
    assert calls == 100  # not the 2,900 cookies of every domain


def test_a_site_deletes_its_cookie_with_max_age_0():
    settings = jar()
    settings.note_response("http://s.test/", [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])
    settings.note_response("http://s.test/", [("Set-Cookie", "a=gone; Max-Age=0")])
    assert settings.for_url("http://s.test/")["Cookie"] == "b=2"
    assert len(settings.site_cookies) == 1


@pytest.fixture
def tab_cookie_server() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<p>hello</p>"
            self.send_response(200 if self.path != "/robots.txt" else 404)
            self.send_header("Set-Cookie", "tabv=a\tb; Path=/")
            self.send_header("Set-Cookie", "ok=1; Path=/")
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_cookie_with_a_tab_does_not_break_the_next_run(tmp_path: Path, tab_cookie_server):
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# none\n")
    state = tmp_path / "state"
    common = ["--state", str(state), "--min-delay", "0", "--allow-net", "127.0.0.1/32"]
    common += ["--cookies", str(cookies)]
    res = crawlkit("crawl", tab_cookie_server, *common, timeout=120)
    assert res.code == 0, res.stderr
    jar_text = (state / "crawl" / "cookies.txt").read_text()
    assert "\tok\t1" in jar_text and "tabv" not in jar_text
    # a jar an older version wrote with the tab in it: the line is skipped, with a warning
    (state / "crawl" / "cookies.txt").write_text(
        jar_text + "127.0.0.1\tFALSE\t/\tFALSE\t0\ttabv\ta\tb\n"
    )
    res = crawlkit("crawl", tab_cookie_server + "again", *common, timeout=120)
    assert res.code == 0, res.stderr
    assert "cookies.txt:3: " in res.stderr and "skipped" in res.stderr


@pytest.mark.parametrize(
    ("path", "sent"),
    [
        ("/sub", True),
        ("/sub/page", True),
        ("/subway", False),  # RFC 6265 5.1.4: a path-match ends at a "/"
        ("/subscribe", False),
        ("/other", False),
    ],
)
def test_a_cookie_path_matches_whole_segments(path: str, sent: bool) -> None:
    cookie = Cookie("a.test", False, "/sub", False, 0, "sess", "abc")
    assert cookie.matches("http", "a.test", path, 0.0) is sent
    assert Cookie("a.test", False, "/sub/", False, 0, "s", "v").matches(
        "http", "a.test", "/sub/x", 0.0
    )
