"""crawlkit testweb: the core (server, files, log, determinism, conditional GET)."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import start_testweb

from crawlkit.testweb import TestWebServer, WebConfig, build_web, parse_specials
from crawlkit.testweb.pages import page_links, page_number, page_path
from crawlkit.url import Canonicalizer


def test_ready_line_and_files(testweb):
    info = testweb.info
    assert info["ready"] is True
    for key in ("seeds", "hosts_file", "log", "manifest"):
        assert Path(info[key]).exists(), key
    hosts = [
        line.split()
        for line in testweb.hosts_file.read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert len(hosts) == info["hosts"]
    for addr, name in hosts:
        assert addr.startswith("127.") and name.endswith(".test")
    seeds = testweb.seeds.read_text().split()
    assert f"http://h0.test:{testweb.port}/" in seeds
    assert not any("private" in s for s in seeds)
    assert info["reachable_pages"] == sum(
        len(h["pages"]) for h in testweb.manifest["hosts"] if not h["private"]
    )


def test_pages_links_and_log(testweb):
    status, headers, body = testweb.get(testweb.url("h0.test", "/"))
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b"<nav>" in body and b"<footer>" in body and b"Partners" in body
    reqs = testweb.requests()
    rec = reqs[-1]
    assert rec["host"] == "h0.test" and rec["path"] == "/" and rec["status"] == 200
    assert rec["addr"] == testweb.hosts["h0.test"] and rec["port"] == testweb.port
    assert rec["bytes"] == len(body) and rec["t_end"] >= rec["t_start"] > 0
    assert rec["user_agent"] == "crawlkit-test/1.0" and rec["special"] == "ordinary"
    assert isinstance(rec["conn"], int)


def test_every_ordinary_link_resolves_to_a_manifest_page(testweb):
    """Links vary in form (relative, <base>, fragments, tracking, reordered query), yet
    each canonicalizes to a page the manifest lists."""
    canon = Canonicalizer()
    known = {u for h in testweb.manifest["hosts"] for u in h["pages"]}
    import re

    checked = 0
    for host in testweb.hosts_of_kind("ordinary"):
        for url in host["pages"][:8]:
            status, _, body = testweb.get(url)
            assert status == 200
            html = body.decode()
            base = re.search(r'<base href="([^"]+)">', html)
            base_url = canon.canonicalize(base.group(1), url) if base else url
            for href in re.findall(r'<a href="([^"]+)"', html):
                target = canon.canonicalize(href.replace("&amp;", "&"), base_url)
                assert target in known, (url, href, target)
                checked += 1
    assert checked > 100


def test_keep_alive_and_pipelining(testweb):
    addr = testweb.hosts["h1.test"]
    host = f"h1.test:{testweb.port}"
    with socket.create_connection((addr, testweb.port), timeout=5) as s:
        one = "GET {} HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
        req = one.format("/") + one.format("/robots.txt")
        s.sendall(req.encode())
        data = b""
        deadline = time.monotonic() + 5
        while data.count(b"HTTP/1.1 200") < 2 and time.monotonic() < deadline:
            data += s.recv(65536)
    assert data.count(b"HTTP/1.1 200") == 2
    reqs = [r for r in testweb.requests() if r["host"] == "h1.test"]
    assert len({r["conn"] for r in reqs}) == 1 and len(reqs) == 2


def test_conditional_get_and_gzip(testweb):
    url = testweb.url("h0.test", "/")
    status, headers, body = testweb.get(url)
    etag, lm = headers["etag"], headers["last-modified"]
    assert testweb.get(url, headers={"If-None-Match": etag})[0] == 304
    assert testweb.get(url, headers={"If-None-Match": '"other"'})[0] == 200
    assert testweb.get(url, headers={"If-Modified-Since": lm})[0] == 304
    assert (
        testweb.get(url, headers={"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"})[0] == 200
    )
    status, headers, zbody = testweb.get(url, headers={"Accept-Encoding": "gzip"})
    assert headers["content-encoding"] == "gzip" and gzip.decompress(zbody) == body
    status, headers, head_body = testweb.get(url, method="HEAD")
    assert status == 200 and head_body == b"" and int(headers["content-length"]) == len(body)
    logged = [r for r in testweb.requests() if r["status"] == 304]
    assert logged[0]["if_none_match"] == etag
    assert any(r["if_modified_since"] == lm for r in logged)


def test_misdirected_and_unknown_host(testweb):
    import http.client

    conn = http.client.HTTPConnection(testweb.hosts["h0.test"], testweb.port, timeout=5)
    conn.request("GET", "/", headers={"Host": f"nosuch.test:{testweb.port}"})
    assert conn.getresponse().status == 404
    conn.close()
    conn = http.client.HTTPConnection(testweb.hosts["robots-404-0.test"], testweb.port, timeout=5)
    conn.request("GET", "/", headers={"Host": f"h0.test:{testweb.port}"})
    assert conn.getresponse().status == 421
    conn.close()


def _digest_of_web(tmp_path: Path, seed: int, port: int) -> str:
    async def go() -> str:
        config = WebConfig(hosts=4, pages=15, page_kb=4, seed=seed, specials=parse_specials("none"))
        h = hashlib.sha256()
        async with TestWebServer(config, tmp_path / f"w{seed}-{time.time_ns()}", port=port) as srv:
            for host in srv.web.ordinary:
                for p in range(host.pages):
                    h.update(srv.page(host, p).body)
            h.update(srv.hosts_file.read_bytes())
        return h.hexdigest()

    return asyncio.run(go())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_determinism_same_seed_same_bytes(tmp_path):
    port = _free_port()
    a = _digest_of_web(tmp_path, 7, port)
    b = _digest_of_web(tmp_path, 7, port)
    c = _digest_of_web(tmp_path, 8, port)
    assert a == b
    assert a != c


def test_graph_shape():
    config = WebConfig(hosts=40, pages=30, seed=3, specials={})
    web = build_web(config)
    counts = sorted(h.pages for h in web.ordinary)
    assert counts[-1] > 3 * counts[len(counts) // 2]  # skewed: a few big sites
    addrs = [h.addr for h in web.ordinary]
    assert len(set(addrs)) < len(addrs)  # some shared hosting
    host = web.ordinary[0]
    links = page_links(web, host, 0)
    assert 30 <= len(links) <= 50
    same = sum(1 for name, _ in links if name == host.name)
    assert same > len(links) / 2 and same < len(links)
    for p in range(host.pages):
        assert page_number(*page_path(p).partition("?")[::2], host.pages) == p
    # Preferential attachment: inbound cross-host links concentrate on a few hosts.
    inbound: dict[str, int] = {}
    for h in web.ordinary:
        for p in range(min(h.pages, 5)):
            for name, _ in page_links(web, h, p):
                if name != h.name:
                    inbound[name] = inbound.get(name, 0) + 1
    top = sorted(inbound.values(), reverse=True)
    assert top[0] > 3 * top[len(top) // 2]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_small_web_starts_and_stops_cleanly_on_signal(tmp_path, sig):
    t0 = time.monotonic()
    with start_testweb(tmp_path, "--hosts", "3", "--pages", "20", "--special", "none") as web:
        ready = time.monotonic() - t0
        web.get(web.url("h2.test", "/"))
        web.proc.send_signal(sig)
        code = web.proc.wait(timeout=10)
    assert code == 0
    assert ready < 10  # generous: a loaded CI box; the bench measures it properly
    assert json.loads(web.log_path.read_text().splitlines()[-1])["host"] == "h2.test"


def test_same_seed_and_port_same_bytes_across_processes(tmp_path):
    port = _free_port()
    args = ("--hosts", "3", "--pages", "6", "--page-kb", "4", "--seed", "11", "--port", str(port))
    runs = []
    for _ in range(2):
        with start_testweb(tmp_path, *args) as web:
            bodies = [
                web.get(u)[2]
                for h in web.manifest["hosts"]
                if not h["infinite"] and h["kind"] not in ("near-duplicates", "changing", "slow")
                for u in h["pages"][:3]
            ]
            manifest = dict(web.manifest)
            manifest["hosts"] = [
                {**h, "robots": {**h["robots"], "file": None}} for h in manifest["hosts"]
            ]
            runs.append((bodies, manifest, web.hosts_file.read_bytes(), web.seeds.read_bytes()))
    assert runs[0] == runs[1]


def test_for_duration_ends_by_itself(tmp_path):
    with start_testweb(
        tmp_path, "--hosts", "1", "--pages", "3", "--special", "none", "--for", "0.5s"
    ) as web:
        assert web.proc.wait(timeout=10) == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("none", {}),
        ("none,slow:2,calendar", {"slow": 2, "calendar": 1}),
        ("slow", {"slow": 1}),
    ],
)
def test_parse_specials(text, expected):
    assert parse_specials(text) == expected


def test_parse_specials_all_minus():
    allk = parse_specials("all")
    assert "huge" in allk and "huge" not in parse_specials("all,-huge")
    assert parse_specials("-huge") == parse_specials("all,-huge")


def test_cli_rejects_unknown_special(cli, tmp_path):
    r = cli("testweb", "--dir", str(tmp_path), "--special", "nonsense")
    assert r.code == 2 and "unknown special" in r.stderr


@pytest.mark.parametrize("kb", [8, 20])
def test_page_size_follows_page_kb(kb):
    from crawlkit.testweb.pages import render_page

    web = build_web(WebConfig(hosts=2, pages=10, page_kb=kb, specials={}))
    sizes = [len(render_page(web, h, p, 8080)) for h in web.ordinary for p in range(h.pages)]
    mean = sum(sizes) / len(sizes) / 1024
    assert 0.85 * kb <= mean <= 1.25 * kb


def test_custom_file_paths(tmp_path):
    hosts, seeds, log = tmp_path / "my.hosts", tmp_path / "my.seeds", tmp_path / "my.log"
    args = (
        "--hosts",
        "2",
        "--pages",
        "3",
        "--special",
        "none",
        "--hosts-file",
        str(hosts),
        "--seeds",
        str(seeds),
        "--log",
        str(log),
    )
    with start_testweb(tmp_path, *args) as web:
        assert web.info["hosts_file"] == str(hosts) and web.info["seeds"] == str(seeds)
        assert web.info["log"] == str(log) and web.info["hosts"] == 2
        assert seeds.read_text().split() == [web.url("h0.test"), web.url("h1.test")]
        web.get(web.url("h1.test", "/"))
        assert web.requests()[-1]["host"] == "h1.test"


def test_sigusr1_flushes_the_request_log_for_a_waiting_client(tmp_path):
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "5", "--special", "none") as web:
        for i in range(20):
            web.get(web.url("h1.test", f"/?n={i}"))
            web.flush()  # no sleep: the request is in the log once flush() returns
            lines = web.log_path.read_text().splitlines()
            assert len(lines) == i + 1 and json.loads(lines[-1])["path"] == f"/?n={i}"
        assert (web.dir / "log-flushed").read_text().strip() == "20"


def test_ip_hosts_redirect_across_hosts_stays_on_the_web(tmp_path: Path) -> None:
    """Under --ip-hosts there is no h0.test: the cross-host redirect names the first
    host by its IP literal, which the web serves (no name left for a system DNS)."""
    with start_testweb(
        tmp_path, "--hosts", "3", "--pages", "2", "--ip-hosts", "--special", "redirects"
    ) as web:
        (site,) = [h for h in web.manifest["hosts"] if h["kind"] == "redirects"]
        source, target = site["notes"]["redirects"]["cross_host"]
        status, headers, _ = web.get(source)
        assert status == 302 and headers["location"] == target
        host = target.split("//", 1)[1].rsplit(":", 1)[0]
        assert host in web.hosts and host.replace(".", "").isdigit()
        assert web.get(target)[0] == 200


def test_warm_renders_every_page_before_ready_and_serves_the_same_bytes(tmp_path):
    """--warm (for benchmarks): every ordinary page and its gzip form are made before
    the server is ready, and a request gets the very bytes an unwarmed server makes."""
    port = _free_port()
    config = WebConfig(hosts=4, pages=15, page_kb=4, seed=7, specials=parse_specials("none"))

    async def serve(warm: bool) -> tuple[int, int, dict[str, bytes]]:
        directory = tmp_path / f"w{warm}-{time.time_ns()}"
        async with TestWebServer(config, directory, port=port, warm=warm) as srv:
            total = sum(h.pages for h in srv.web.ordinary)
            made_before = sum(1 for e in srv._cache.values() if e.gz is not None)
            loop = asyncio.get_running_loop()
            got = {}
            for host in srv.web.ordinary:
                for p in (0, host.pages - 1):
                    url = srv.url(host.name, page_path(p))
                    got[url] = await loop.run_in_executor(None, _get_gzip, host.addr, port, url)
        return total, made_before, got

    total, warmed, warm_bodies = asyncio.run(serve(True))
    _, cold, cold_bodies = asyncio.run(serve(False))
    assert warmed == total > 0 and cold == 0
    assert warm_bodies == cold_bodies and len(warm_bodies) == 8


def _get_gzip(addr: str, port: int, url: str) -> bytes:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(addr, port, timeout=10)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    conn.request("GET", target, headers={"Host": parts.netloc, "Accept-Encoding": "gzip"})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    assert resp.status == 200 and resp.getheader("Content-Encoding") == "gzip"
    return body


def test_a_web_over_the_open_file_limit_is_refused_in_one_line(tmp_path: Path) -> None:
    """One listening socket per host address: a web that needs more than the open-file
    limit allows is refused before it binds, saying how many and what the limit is
    (it failed after binding them all: "requests.ndjson: too many open files")."""
    args = ["testweb", "--hosts", "500", "--special", "none", "--dir", str(tmp_path / "web")]
    # bash's ulimit -n sets the hard limit too: the CLI cannot raise it
    limited = ["bash", "-c", 'ulimit -n 400 && exec "$@"', "bash"]
    proc = subprocess.run(
        [*limited, sys.executable, "-m", "crawlkit", *args, "--for", "5s"],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert proc.stdout == b""  # no ready line: nothing was served
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    need = re.search(r"testweb: ([\d,]+) host addresses need ([\d,]+) listening sockets", err)
    assert need is not None and need[1] == need[2], err
    assert 300 < int(need[1].replace(",", "")) <= 500  # named hosts share some addresses
    assert "open-file limit is 400 (hard limit 400;" in lines[0]
