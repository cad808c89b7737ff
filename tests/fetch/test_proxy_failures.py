"""A --proxy that fails (unreachable, 407) is named as the proxy, never blamed on the
site: the run stops, every URL comes out deferred ("stopped"), the command says why in
one line, and the next run asks the site at once (no backoff, robots.txt not taken for
unavailable). A CONNECT it answers 502 (it could not reach the site) is that site's
error, named as the proxy's answer, and the run goes on."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import socketserver
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Result, fetch_loopback, serve_routes, start_crawlkit

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


class _Tunnel(socketserver.StreamRequestHandler):
    """A CONNECT proxy's tunnel: the bytes both ways, to the address asked for."""

    def handle(self) -> None:
        target = self.rfile.readline().decode("latin-1").split()[1]
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        host, port = target.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as site:
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            back = threading.Thread(target=_pipe, args=(site, self.connection), daemon=True)
            back.start()
            _pipe(self.connection, site)
            back.join()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the other end gone: the tunnel ends
        while data := src.recv(65536):
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)


class _Site(http.server.BaseHTTPRequestHandler):
    """An HTTPS site whose /gate answers 407 itself (a gateway in front of it)."""

    def do_GET(self) -> None:
        status = {"/gate": 407, "/page": 200}.get(self.path, 404)
        self.send_response(status)
        if status == 407:
            self.send_header("Proxy-Authenticate", 'Basic realm="the site"')
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


def test_a_407_from_the_site_through_a_tunnel_is_the_sites_answer(tmp_path: Path) -> None:
    """Through a CONNECT tunnel only the site answers (the proxy relays TLS it cannot
    read): its 407 is its page, not the proxy's refusal, and the run goes on. Taken
    for the proxy's, one such site stopped every crawl behind a proxy."""
    tls = pytest.importorskip("crawlkit.testweb.tls", reason="needs crawlkit[testweb]")
    ca = tls.CertificateAuthority()
    (tmp_path / "site.pem").write_bytes(ca.issue("site.test"))
    (tmp_path / "ca.pem").write_bytes(ca.ca_pem())
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "site.pem")
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    site.socket = context.wrap_socket(site.socket, server_side=True)
    tunnel = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Tunnel)
    tunnel.daemon_threads = True
    (tmp_path / "hosts").write_text("127.0.0.1 site.test\n")
    root = f"https://site.test:{site.server_address[1]}"
    urls = [f"{root}/gate", f"{root}/page"]
    for server in (site, tunnel):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        res = fetch_loopback(
            tmp_path / "s",
            urls,
            *("--proxy", f"http://127.0.0.1:{tunnel.server_address[1]}"),
            *("--hosts-file", str(tmp_path / "hosts"), "--ca-file", str(tmp_path / "ca.pem")),
        )
    finally:
        for server in (site, tunnel):
            server.shutdown()
            server.server_close()
    assert res.code == 0, res.stderr
    got = {r["url"]: r for r in _records(res)}
    assert got[urls[0]]["status"] == 407 and not got[urls[0]].get("stopped"), got[urls[0]]
    assert "error_code" not in got[urls[0]]
    assert (got[urls[1]]["outcome"], got[urls[1]]["status"]) == ("fetched", 200)


def test_a_proxy_failure_stands_when_the_reader_of_the_records_is_gone(tmp_path: Path) -> None:
    """``fetch --proxy P | head -1`` of a failed proxy exited 0 with nothing said: the
    closed pipe's quiet end hid the failure from ``set -o pipefail``, as it hid audit's
    violations (c5e1ce0). The reader here is gone before fetch writes anything."""
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        proxy_url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        urls = "".join(f"http://127.0.0.1:9/p{i}\n" for i in range(3))
        proc = start_crawlkit(
            *("fetch", "--state", str(tmp_path / "s"), "--allow-net", "127.0.0.0/8"),
            *("--proxy", proxy_url),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        proc.stdout.close()  # the reader goes away at once
        _, err = proc.communicate(urls.encode(), timeout=120)
    assert proc.returncode == 1, err
    (line,) = err.decode().strip().splitlines()
    assert line.startswith("crawlkit fetch: proxy-unreachable: cannot connect to the proxy")
    assert proxy_url in line
