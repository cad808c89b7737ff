"""A crawl that waits on nothing (issue 25): a down seed, a slow response, a silent DNS
server, an early SIGTERM.

Each case runs the real command against servers made here on loopback: an aiohttp
server whose one host drips its page a byte a second while the other links page to
page, and a DNS server that never answers. Stops are judged by waiting on events (a
request in a server's log, a query reaching the DNS server) with bounds far above what
a working crawl needs, never by timing the crawl.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import orjson
from aiohttp import web
from conftest import crawlkit

DRIP_SECONDS = 60  # the drip lasts longer than any bound below


def _popen(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "crawlkit", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


class Servers:
    """Two HTTP hosts on 127.0.0.1 (``drip`` and ``chain``) on a thread's event loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.paths: list[tuple[str, str]] = []  # (host, path) of each request, in order
        self.seen = threading.Condition()
        self.ports: dict[str, int] = {}
        self._stop: asyncio.Event | None = None
        self._runners: list[web.AppRunner] = []

    async def _cleanup(self) -> None:
        for runner in self._runners:
            await runner.cleanup()

    async def _drip(self, request: web.Request) -> web.StreamResponse:
        self._log("drip", request.path)
        if request.path == "/robots.txt":
            return web.Response(text="")
        resp = web.StreamResponse(headers={"Content-Type": "text/html"})
        await resp.prepare(request)
        assert self._stop is not None
        try:
            for _ in range(DRIP_SECONDS):
                await resp.write(b" ")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 1.0)
                    break
        except ConnectionError:
            pass  # the crawler gave up on it
        return resp

    async def _chain(self, request: web.Request) -> web.Response:
        self._log("chain", request.path)
        if request.path == "/robots.txt":
            return web.Response(text="")
        n = int(request.path.strip("/") or 0)
        body = f'<html><body><a href="/{n + 1}">page {n + 1}</a></body></html>'
        return web.Response(text=body, content_type="text/html")

    def _log(self, host: str, path: str) -> None:
        with self.seen:
            self.paths.append((host, path))
            self.seen.notify_all()

    def wait_for(self, host: str, path: str, timeout: float) -> bool:
        with self.seen:
            return self.seen.wait_for(lambda: (host, path) in self.paths, timeout)

    async def _start(self) -> None:
        self._stop = asyncio.Event()
        for name, handler in (("drip", self._drip), ("chain", self._chain)):
            app = web.Application()
            app.router.add_get("/{path:.*}", handler)
            runner = web.AppRunner(app)
            self._runners.append(runner)
            await runner.setup()
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            self.ports[name] = sock.getsockname()[1]
            await web.SockSite(runner, sock).start()

    def end_drip(self) -> None:
        """Finish the dripping response now."""
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)

    @contextmanager
    def running(self) -> Iterator[Servers]:
        thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        try:
            yield self
        finally:
            self.end_drip()
            asyncio.run_coroutine_threadsafe(self._cleanup(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            thread.join(10)
            self.loop.close()


def test_a_slow_response_holds_no_other_host(tmp_path: Path) -> None:
    """Issue 25 item 10: while one host drips its page a byte a second, the other host's
    pages, each found on the one before, are fetched one after the other. (The fetcher
    took its first hosts off the scheduler, committed the state, and a refill asked
    meanwhile saw no work and said "no more" for the whole fetch run.)"""
    with Servers().running() as servers:
        drip = f"http://127.0.0.1:{servers.ports['drip']}/"
        chain = f"http://127.0.0.1:{servers.ports['chain']}/"
        proc = _popen(
            "crawl",
            drip,
            chain,
            "--state",
            str(tmp_path / "s"),
            "--allow-net",
            "127.0.0.1/32",
            "--scope",
            "any",
            "--min-delay",
            "0",
            "--delay-factor",
            "1",
            "--for",
            f"{DRIP_SECONDS}s",
        )
        try:
            assert servers.wait_for("drip", "/", 20), "the drip never started"
            # page 3 is found on page 2, found on page 1, found on the home page: three
            # cycles cut and post-processed while the drip goes on
            reached = servers.wait_for("chain", "/3", 20)
        finally:
            proc.send_signal(signal.SIGTERM)
            servers.end_drip()  # a request in flight is answered before the stop
            _out, err = proc.communicate(timeout=60)
    assert reached, f"page 3 was not asked for while the drip went on: {servers.paths}"
    assert proc.returncode == 0, err.decode()
    assert "interrupted (SIGTERM)" in err.decode()


class _Logged(BaseHTTPRequestHandler):
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).paths.append(self.path)
        body = b"" if self.path == "/robots.txt" else b"<html><body>seed</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain" if not body else "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_seed_whose_server_is_down_fails_then_is_fetched_once_it_is_up(
    tmp_path: Path,
) -> None:
    """Issue 25 item 1: nothing listens, so robots.txt cannot be had and the seed is
    deferred: the run says why and exits 1, the seed waits. The same command once the
    server is up asks robots.txt again (not after its retry time) and fetches it."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    seed = f"http://127.0.0.1:{port}/seed"
    state = tmp_path / "s"
    args = ("crawl", seed, "--state", str(state), "--allow-net", "127.0.0.1/32")
    args += ("--min-delay", "0", "--for", "30s", "--json")
    down = crawlkit(*args)
    assert down.code == 1, down.stderr
    last = down.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"crawlkit crawl: nothing was fetched (robots.txt unavailable 1, e.g. {seed}"
    )
    summary = orjson.loads(down.stdout)
    assert summary["outcomes"] == {"deferred": 1} and summary["waiting"] == 1
    # without --for it does not sleep until the retry time either: it says so and ends
    again = crawlkit(*args[:-3], "--json")
    assert again.code == 1 and "nothing was fetched" in again.stderr
    assert orjson.loads(again.stdout)["stopped"] == "nothing could be fetched; deferred URLs wait"

    _Logged.paths = []
    server = ThreadingHTTPServer(("127.0.0.1", port), _Logged)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        up = crawlkit(*args)
    finally:
        server.shutdown()
        server.server_close()
    assert up.code == 0, up.stderr
    assert _Logged.paths == ["/robots.txt", "/seed"]
    summary = orjson.loads(up.stdout)
    assert summary["fetched"] == 1 and summary["waiting"] == 0, summary


NAMES = 300  # lookups a silent server holds 3 s each, 32 at a time: 30 s without the fix


@contextmanager
def silent_dns() -> Iterator[tuple[str, threading.Event]]:
    """A DNS server on loopback that reads every query and answers none; the event is
    set by the first query."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    asked = threading.Event()
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                sock.recvfrom(4096)
            except TimeoutError:
                continue
            asked.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}", asked
    finally:
        done.set()
        thread.join(5)
        sock.close()


def _dns_crawl_args(tmp_path: Path, server: str) -> list[str]:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"http://h{i}.silent.test/\n" for i in range(NAMES)))
    return ["crawl", str(seeds), "--state", str(tmp_path / "s"), "--dns-server", server]


def _all_deferred_and_waiting(summary: dict) -> None:
    """Nothing lost: each URL handed to the fetcher is deferred (not started before
    the stop) and waits; the others are still queued."""
    deferred = summary["outcomes"].get("deferred", 0)
    assert deferred and summary["outcomes"] == {"deferred": deferred}, summary
    assert summary["unstarted"] == deferred and summary["waiting"] == deferred, summary
    assert deferred + summary["queued"] == NAMES, summary


def test_for_ends_on_time_while_lookups_go_unanswered(tmp_path: Path) -> None:
    """Issue 25 item 8: --for abandons the lookups a silent DNS server holds; their
    URLs come out deferred and wait for the next run."""
    with silent_dns() as (server, _asked):
        # 20 s: what the fix needs is --for and a few seconds; without it, 30 s
        res = crawlkit(*_dns_crawl_args(tmp_path, server), "--for", "3s", "--json", timeout=20)
    assert res.code == 0, res.stderr
    summary = orjson.loads(res.stdout)
    assert summary["stopped"] == "time limit (--for)", summary
    _all_deferred_and_waiting(summary)


def test_sigterm_ends_the_run_while_lookups_go_unanswered(tmp_path: Path) -> None:
    """Issue 25 item 8: the first SIGTERM abandons pending lookups; the summary says
    "interrupted" (it said "frontier empty" after waiting out every lookup)."""
    with silent_dns() as (server, asked):
        proc = _popen(*_dns_crawl_args(tmp_path, server), "--json")
        try:
            assert asked.wait(30), "no lookup reached the DNS server"
        finally:
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)  # without the fix: 30 s
    assert proc.returncode == 0, err.decode()
    summary = orjson.loads(out)
    assert summary["stopped"] == "interrupted (SIGTERM)", summary
    _all_deferred_and_waiting(summary)


def test_a_sigterm_before_the_crawl_has_started_is_a_clean_stop(tmp_path: Path) -> None:
    """Issue 25 item 14: a SIGTERM in the run's first moments (imports, reading seeds,
    opening the stores) ended it with status 143. The seeds file is a FIFO, so the
    signal lands while the command reads its seeds, before the crawl's own handlers."""
    fifo = tmp_path / "seeds"
    os.mkfifo(fifo)
    proc = _popen("crawl", str(fifo), "--state", str(tmp_path / "s"), "--json")
    try:
        with open(fifo, "w") as seeds:  # opens once the command opens it to read
            proc.send_signal(signal.SIGTERM)
            seeds.write("http://127.0.0.1:9/\n")
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, (proc.returncode, err.decode())
    summary = orjson.loads(out)
    assert summary["stopped"] == "interrupted (SIGTERM)", summary
    assert summary["queued"] == 1 and summary["outcomes"] == {}, summary  # the seed waits
