"""--proxy against a proxy whose resolver answers differently (issue 25 item 5), and
proxy credentials kept out of everything shown or stored (item 6).

The test's own proxy maps ``evil.test`` to 127.0.0.1, where a "private" service
listens; crawlkit's hosts file maps it to 127.0.0.2, the only address allowed. A
proxy sent the name would reach the private service (split-horizon DNS, rebinding);
crawlkit must send it the address it checked.
"""

from __future__ import annotations

import base64
import gzip
import http.server
import json
import socket
import socketserver
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import crawlkit

PASSWORD = "s3cr3tPASS"
TOKEN = base64.b64encode(f"user:{PASSWORD}".encode()).decode()


@dataclass
class Served:
    hosts: list[str] = field(default_factory=list)


def _site(address: str, port: int, body: bytes, served: Served) -> http.server.HTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.hosts.append(f"{self.headers.get('Host')}{self.path}")
            page = body if self.path != "/robots.txt" else b""
            self.send_response(200 if page else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    return http.server.ThreadingHTTPServer((address, port), Handler)


class _Proxy(socketserver.ThreadingTCPServer):
    """An HTTP forward proxy with its own name table: ``evil.test`` is 127.0.0.1 here.
    Logs (request line, Host, Proxy-Authorization); CONNECT is logged and refused."""

    daemon_threads = True

    def __init__(self) -> None:
        self.table = {"evil.test": "127.0.0.1"}
        self.log: list[tuple[str, str | None, str | None]] = []
        super().__init__(("127.0.0.1", 0), _ProxyHandler)


class _ProxyHandler(socketserver.StreamRequestHandler):
    server: _Proxy

    def handle(self) -> None:
        line = self.rfile.readline().decode("latin-1").strip()
        fields: list[str] = []
        while (raw := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
            fields.append(raw.decode("latin-1").rstrip("\r\n"))
        named = {f.split(":", 1)[0].lower(): f.split(":", 1)[1].strip() for f in fields}
        self.server.log.append((line, named.get("host"), named.get("proxy-authorization")))
        method, target, _ = line.split(" ", 2)
        if method != "GET":
            self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        url = urlsplit(target)
        host = url.hostname or ""
        address = self.server.table.get(host, host)  # the proxy's resolver
        keep = [
            f
            for f in fields
            if f.split(":", 1)[0].lower()
            not in ("connection", "proxy-connection", "proxy-authorization", "keep-alive")
        ]
        with socket.create_connection((address, url.port or 80), timeout=10) as up:
            head = f"GET {url.path or '/'} HTTP/1.1\r\n" + "".join(f"{f}\r\n" for f in keep)
            up.sendall((head + "Connection: close\r\n\r\n").encode("latin-1"))
            while chunk := up.recv(65536):
                self.wfile.write(chunk)


def _serve(server: socketserver.BaseServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


@dataclass
class World:
    port: int
    proxy: _Proxy
    site: Served
    private: Served
    hosts_file: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    site, private = Served(), Served()
    secret = _site("127.0.0.1", 0, b"<p>PRIVATE service</p>", private)
    port = secret.server_address[1]
    public = _site("127.0.0.2", port, b"<p>public page</p>", site)  # the same port
    proxy = _Proxy()
    for server in (secret, public, proxy):
        _serve(server)
    hosts_file = tmp_path_factory.mktemp("proxy") / "hosts"
    hosts_file.write_text("127.0.0.2 evil.test\n")
    try:
        yield World(port, proxy, site, private, hosts_file)
    finally:
        for server in (secret, public, proxy):
            server.shutdown()
            server.server_close()


@pytest.fixture(scope="module")
def crawled(world: World, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One crawl of http://evil.test:PORT/ through the proxy, with credentials."""
    state = tmp_path_factory.mktemp("crawl") / "state"
    proxy = f"http://user:{PASSWORD}@127.0.0.1:{world.proxy.server_address[1]}"
    res = crawlkit(
        "crawl",
        f"http://evil.test:{world.port}/",
        "--state",
        str(state),
        "--min-delay",
        "0",
        "--allow-net",
        "127.0.0.2/32",
        "--hosts-file",
        str(world.hosts_file),
        "--proxy",
        proxy,
        timeout=120,
    )
    assert res.code == 0, res.stderr
    return state, res.stderr


def test_the_proxy_is_sent_the_checked_address_not_the_name(world: World, crawled):
    state, _ = crawled
    assert not world.private.hosts  # the proxy's own answer for evil.test was never used
    assert f"evil.test:{world.port}/" in world.site.hosts  # the name went in Host
    lines = [line for line, _, _ in world.proxy.log if line.startswith("GET ")]
    assert lines and all(
        line.startswith(f"GET http://127.0.0.2:{world.port}/") for line in lines
    ), lines
    hosts = {host for line, host, _ in world.proxy.log if line.startswith("GET ")}
    assert hosts == {f"evil.test:{world.port}"}
    bodies = b""
    for warc in (state / "warc").glob("*.warc.gz"):
        bodies += gzip.decompress(warc.read_bytes())
    assert b"public page" in bodies and b"PRIVATE" not in bodies
    assert f"WARC-Target-URI: http://evil.test:{world.port}/".encode() in bodies


def test_https_through_a_proxy_connects_to_the_checked_address(world: World):
    import asyncio

    from crawlkit.fetch.client import AiohttpClient, FetchRequest

    async def fetch() -> str | None:
        client = AiohttpClient(proxy=f"http://127.0.0.1:{world.proxy.server_address[1]}")
        try:
            url = f"https://evil.test:{world.port}/"
            result = await client.fetch(FetchRequest(url, "127.0.0.2", timeout=10))
        finally:
            await client.close()
        return result.error

    before = len(world.proxy.log)
    assert asyncio.run(fetch())  # the test proxy refuses CONNECT
    assert world.proxy.log[before][0] == f"CONNECT 127.0.0.2:{world.port} HTTP/1.1"


def test_no_proxy_names_hosts_with_trust_env(monkeypatch):
    from crawlkit.fetch.client import AiohttpClient

    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "evil.test")
    import asyncio

    import yarl

    async def pick() -> tuple[object, object]:
        client = AiohttpClient(trust_env=True)
        try:
            return (
                client._proxy_for(yarl.URL("http://evil.test/")),
                client._proxy_for(yarl.URL("http://other.test/")),
            )
        finally:
            await client.close()

    bypassed, proxied = asyncio.run(pick())
    assert bypassed is None and str(proxied) == "http://127.0.0.1:9"


def _texts(root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
            out[str(path)] = data
    return out


def test_proxy_credentials_are_masked_everywhere_and_state_is_0600(
    world: World, crawled, tmp_path: Path
):
    state, stderr = crawled
    # the proxy still got its credentials
    sent = {auth for line, _, auth in world.proxy.log if line.startswith("GET ")}
    assert sent == {f"Basic {TOKEN}"}
    settings_path = state / "crawl" / "settings.json"
    settings = json.loads(settings_path.read_text())
    assert settings["settings"]["fetch"]["proxy"].startswith("http://***@127.0.0.1:")
    assert settings_path.stat().st_mode & 0o777 == 0o600
    report = crawlkit("report", "--state", str(state), "--html", str(tmp_path / "r.html"))
    assert report.code == 0, report.stderr
    (tmp_path / "report.json").write_bytes(report.stdout)
    warcs = sorted(str(p) for p in (state / "warc").glob("*.warc.gz"))
    wacz = tmp_path / "c.wacz"
    res = crawlkit(
        "wacz",
        *warcs,
        "-o",
        str(wacz),
        "--report",
        str(tmp_path / "report.json"),
        "--report",
        str(tmp_path / "r.html"),
    )
    assert res.code == 0, res.stderr
    with zipfile.ZipFile(wacz) as z:
        packed = {n: z.read(n) for n in z.namelist()}
    packed = {n: gzip.decompress(d) if n.endswith(".gz") else d for n, d in packed.items()}
    everything = {**_texts(state), **_texts(tmp_path), **packed, "stderr": stderr.encode()}
    for name, data in everything.items():
        assert PASSWORD.encode() not in data, name
        assert TOKEN.encode() not in data, name  # not even as a Proxy-Authorization


def test_mask_url_hides_a_password_holding_an_at_sign():
    from crawlkit.masking import mask_url

    assert mask_url("http://u:p@ss@proxy:3128/") == "http://***@proxy:3128/"
    assert mask_url("--proxy http://u:pw@h:1 and http://h2/x?a=b@c") == (
        "--proxy http://***@h:1 and http://h2/x?a=b@c"
    )


def test_a_bad_proxy_value_is_not_echoed_with_its_password(tmp_path: Path):
    bad = f"socks5://u:{PASSWORD}@127.0.0.1:1"
    res = crawlkit("crawl", "http://x.test/", "--state", str(tmp_path / "s"), "--proxy", bad)
    assert res.code == 2 and "--proxy" in res.stderr and PASSWORD not in res.stderr


def test_a_report_masks_the_password_an_older_settings_file_holds(crawled, tmp_path: Path):
    state, _ = crawled
    import shutil

    old = tmp_path / "old"
    shutil.copytree(state, old)
    settings = json.loads((state / "crawl" / "settings.json").read_text())
    settings["settings"]["fetch"]["proxy"] = f"http://user:{PASSWORD}@127.0.0.1:3128"
    settings["seeds"].append(f"http://me:{PASSWORD}@site.test/")
    (old / "crawl" / "settings.json").write_text(json.dumps(settings))
    report = crawlkit("report", "--state", str(old), "--html", str(tmp_path / "r.html"))
    assert report.code == 0, report.stderr
    assert PASSWORD.encode() not in report.stdout
    assert PASSWORD not in (tmp_path / "r.html").read_text()
    assert b"http://***@127.0.0.1:3128" in report.stdout
