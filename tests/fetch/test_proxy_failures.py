"""A --proxy that fails (unreachable, 407) is named as the proxy, never blamed on the
site: the run stops, every URL comes out deferred ("stopped"), the command says why in
one line, and the next run asks the site at once (no backoff, robots.txt not taken for
unavailable). A CONNECT it answers 502 (it could not reach the site) is that site's
error, named as the proxy's answer, and the run goes on."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Result, fetch_loopback, serve_routes

PAGE = ("text/html", b"<p>a page</p>")


class _Handler(socketserver.StreamRequestHandler):
    server: _FailingProxy

    def handle(self) -> None:
        line = self.rfile.readline().decode("latin-1").strip()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        self.server.log.append(line)
        head = f"HTTP/1.1 {self.server.answer}\r\nContent-Length: 0\r\n"
        if self.server.answer.startswith("407"):
            head += 'Proxy-Authenticate: Basic realm="proxy"\r\n'
        self.wfile.write((head + "\r\n").encode("latin-1"))


class _FailingProxy(socketserver.ThreadingTCPServer):
    """A proxy that answers every request, CONNECT or GET, with ``answer``."""

    daemon_threads = True

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.log: list[str] = []
        super().__init__(("127.0.0.1", 0), _Handler)


@pytest.fixture
def proxy_407() -> Iterator[_FailingProxy]:
    yield from _running(_FailingProxy("407 Proxy Authentication Required"))


@pytest.fixture
def proxy_502() -> Iterator[_FailingProxy]:
    yield from _running(_FailingProxy("502 Bad Gateway"))


def _running(proxy: _FailingProxy) -> Iterator[_FailingProxy]:
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()


def _records(res: Result) -> list[dict]:
    return [json.loads(line) for line in res.lines]


def _check_failed_run(res: Result, urls: list[str], proxy_url: str, says: str) -> None:
    """Exit 1 with one line naming the proxy; every URL deferred, stopped, unfetched."""
    assert res.code == 1, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("crawlkit fetch: proxy-") and proxy_url in line and says in line
    got = _records(res)
    assert sorted(r["url"] for r in got) == sorted(urls)
    for r in got:
        assert (r["outcome"], r["stopped"], r["fetched_at"]) == ("deferred", True, None), r
        assert r["error_code"].startswith("proxy-") and proxy_url in r["error"], r


def _next_run_asks_the_site(state: Path, urls: list[str], log: list[str]) -> None:
    """Without the proxy, on the same state, every URL is fetched at once: the site
    was neither backed off nor left with robots.txt "unavailable"."""
    res = fetch_loopback(state, [u.replace("https://", "http://") for u in urls])
    assert res.code == 0, res.stderr
    assert {r["outcome"] for r in _records(res)} == {"fetched"}
    assert log[0] == "/robots.txt"


def test_a_proxy_asking_for_credentials_stops_the_run(tmp_path: Path, proxy_407) -> None:
    proxy_url = f"http://127.0.0.1:{proxy_407.server_address[1]}"
    with serve_routes({"/a": PAGE, "/b": PAGE}) as (root, log):
        urls = [f"{root}/a", f"{root}/b", f"{root.replace('http:', 'https:')}/a"]
        res = fetch_loopback(tmp_path / "s", urls, "--proxy", proxy_url)
        _check_failed_run(res, urls, proxy_url, "answered 407 Proxy Authentication Required")
        assert not log  # the site was never asked
        # one failure stops the run: no request after it; robots.txt goes through the
        # proxy too (fetch --help says so)
        assert proxy_407.log == [f"GET {root}/robots.txt HTTP/1.1"]
        _next_run_asks_the_site(tmp_path / "s", urls[:2], log)


def test_a_connect_the_proxy_answers_502_is_that_sites_failure(tmp_path: Path, proxy_502) -> None:
    """A 502 to CONNECT says the proxy could not reach that site: the site's error,
    named as the proxy's answer, and the run goes on (a crawl behind a proxy must not
    stop at the first dead HTTPS site)."""
    proxy_url = f"http://127.0.0.1:{proxy_502.server_address[1]}"
    with serve_routes({"/a": PAGE, "/b": PAGE}) as (root, log):
        https = [f"{root.replace('http:', 'https:')}/{p}" for p in "ab"]
        res = fetch_loopback(tmp_path / "s", https, "--proxy", proxy_url)
        assert res.code == 0, res.stderr
        got = {r["url"]: r for r in _records(res)}
        assert sorted(got) == sorted(https)
        for url in https:
            r = got[url]
            assert not r.get("stopped") and r["error_code"] == "proxy-connect", r
            assert proxy_url in r["error"] and "answered CONNECT with 502 Bad Gateway" in r["error"]
        assert f"CONNECT {root.removeprefix('http://')} HTTP/1.1" in proxy_502.log
        assert not log  # the site itself was never asked


def test_a_proxy_that_cannot_be_reached_stops_the_run(tmp_path: Path) -> None:
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        proxy_url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        with serve_routes({"/a": PAGE, "/b": PAGE}) as (root, log):
            urls = [f"{root}/a", f"{root.replace('http:', 'https:')}/b"]
            res = fetch_loopback(tmp_path / "s", urls, "--proxy", proxy_url)
            _check_failed_run(res, urls, proxy_url, "cannot connect to the proxy")
            assert not log
            _next_run_asks_the_site(tmp_path / "s", urls, log)
