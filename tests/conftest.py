"""Shared test helpers: run the real ``crawlkit`` command as a subprocess."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

# CI (``CI`` set, as .ci/run's machine has it) draws the property tests' examples in a
# fixed order: whether a landing passes must not depend on what one run happened to
# draw. Other runs draw afresh each time, which is how they find new edge cases (a
# WARC key for "http://./" was found so).
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@dataclass
class Result:
    code: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8")

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


def crawlkit(
    *args: str, input: bytes | None = None, cwd: Path | None = None, timeout: float = 120
) -> Result:
    """Run ``python -m crawlkit ARGS`` and capture everything."""
    proc = subprocess.run(
        [sys.executable, "-m", "crawlkit", *args],
        input=input,
        capture_output=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    err = proc.stderr.decode("utf-8", "replace")
    # A traceback is a crash of one of the command's processes (or of its exit), never
    # the one-line error a user is owed, whatever the exit status says.
    assert "Traceback (most recent call last)" not in err or "--debug" in args, err
    return Result(proc.returncode, proc.stdout, err)


@pytest.fixture
def cli():
    return crawlkit


@pytest.fixture(autouse=True, scope="session")
def _children_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every process the suite starts makes its temporary files under pytest's own
    temporary root, not in /tmp.

    A test that kills a whole crawl with SIGKILL leaves what the crawl's processes
    made (multiprocessing's ``pymp-*`` socket directories, a worker's ``ckwK-*``):
    no process of that crawl is left to remove them. Here pytest's retention of its
    last runs removes them; in /tmp each run of the suite left 14. The path stays
    short: a fork server's socket under it must fit an AF_UNIX path (107 bytes).
    """
    temp = tmp_path_factory.mktemp("tmp", numbered=False)
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(temp)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before


def poll_until(
    condition: Callable[[], bool],
    proc: subprocess.Popen,
    what: str,
    timeout: float = 60.0,
    every: float = 0.01,
) -> None:
    """Wait until ``condition()`` holds, looking again every ``every`` seconds: for an
    event with no signal of its own (a file that grows, a process in /proc, a lock in
    /proc/locks), looking is the only way to see it. Fails, naming ``what``, if
    ``proc`` (the process expected to bring it about) ends first or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"it ended (status {proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"not {what} in {timeout:g} s"
        time.sleep(every)


def wait_until_locked(lock: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Wait until some process holds the flock on ``lock`` (a state directory's LOCK),
    as /proc/locks shows it: the lock is never touched, so its owner never sees a
    rival. Fails if ``proc`` (the process expected to take it) ends first."""

    def held() -> bool:
        try:
            inode = os.stat(lock).st_ino
        except FileNotFoundError:
            return False
        return any(
            line.split()[1] == "FLOCK" and line.split()[5].rsplit(":", 1)[1] == str(inode)
            for line in Path("/proc/locks").read_text().splitlines()
            if len(line.split()) > 5
        )

    poll_until(held, proc, f"{lock} was locked", timeout)


# -- crawlkit testweb: a synthetic web on loopback (issue 3) ----------------------------
class TestWeb:
    """A running ``crawlkit testweb`` subprocess (see ``start_testweb``).

    ``info`` is the ready line; ``port``, ``seeds``, ``hosts_file``, ``log_path``,
    ``manifest_path`` are taken from it. ``manifest`` is the parsed manifest.json,
    ``hosts`` maps host name → address. ``requests()`` parses the request log as it
    is now (the server flushes it every event-loop turn). ``get()`` is a small
    blocking HTTP client that connects to the host's own address.
    """

    __test__ = False

    def __init__(self, proc: subprocess.Popen[bytes], info: dict, directory: Path):
        self.proc = proc
        self.info = info
        self.dir = directory
        self.port: int = info["port"]
        self.seeds = Path(info["seeds"])
        self.hosts_file = Path(info["hosts_file"])
        self.log_path = Path(info["log"])
        self.manifest_path = Path(info["manifest"])
        self._manifest: dict | None = None

    @property
    def manifest(self) -> dict:
        if self._manifest is None:
            import json

            self._manifest = json.loads(self.manifest_path.read_text())
        return self._manifest

    @property
    def hosts(self) -> dict[str, str]:
        return {h["name"]: h["addr"] for h in self.manifest["hosts"]}

    def host(self, name: str) -> dict:
        return next(h for h in self.manifest["hosts"] if h["name"] == name)

    def hosts_of_kind(self, kind: str) -> list[dict]:
        return [h for h in self.manifest["hosts"] if h["kind"] == kind]

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def requests(self, settle: float = 1.0) -> list[dict]:
        """The request log, parsed. With ``settle`` (the default) every request answered
        so far is in it (:meth:`flush`); ``settle=0`` reads it as it is, for polling."""
        import json

        if settle:
            self.flush()
        text = self.log_path.read_text() if self.log_path.exists() else ""
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until the server has logged every request it answered so far: SIGUSR1
        makes it flush its log and count one more in ``DIR/log-flushed``. A stopped
        server flushed its log as it stopped."""
        import signal
        import time

        if self.proc.poll() is not None:
            return
        marker = self.dir / "log-flushed"

        def count() -> int:
            try:
                return int(marker.read_text() or 0)
            except (FileNotFoundError, ValueError):
                return 0

        before = count()
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while count() <= before:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("testweb did not flush its request log")
            time.sleep(0.005)

    def get(
        self, url: str, *, method: str = "GET", headers: dict | None = None, timeout: float = 10.0
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers with lower-case names, raw body) over a new connection."""
        import http.client
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        addr = self.hosts[parts.hostname]
        conn: http.client.HTTPConnection
        if parts.scheme == "https":  # the web's CA; the name checked, its address dialled
            import socket
            import ssl

            ctx = ssl.create_default_context(cafile=self.info["ca_file"])
            conn = http.client.HTTPSConnection(
                parts.hostname, parts.port, timeout=timeout, context=ctx
            )
            raw = socket.create_connection((addr, parts.port), timeout=timeout)
            conn.sock = ctx.wrap_socket(raw, server_hostname=parts.hostname)
        else:
            conn = http.client.HTTPConnection(addr, parts.port, timeout=timeout)
        try:
            target = parts.path or "/"
            if parts.query:
                target += "?" + parts.query
            hdrs = {"Host": parts.netloc, "User-Agent": "crawlkit-test/1.0", **(headers or {})}
            conn.request(method, target, headers=hdrs)
            resp = conn.getresponse()
            body = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
        finally:
            conn.close()

    def stop(self) -> int:
        """SIGTERM, then wait (bounded); returns the exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout:
            self.proc.stdout.close()
        return self.proc.returncode


@contextlib.contextmanager
def start_testweb(tmp_path: Path, *args: str, timeout: float = 20.0) -> Iterator[TestWeb]:
    """Run ``crawlkit testweb --dir TMP ARGS`` until the block ends.

    Waits (at most ``timeout`` seconds) for the ready line; raises if the process dies
    or stays silent. The web is stopped with SIGTERM on exit, also on failure.
    """
    import json
    import selectors
    import time

    directory = tmp_path / f"testweb-{len(list(tmp_path.glob('testweb-*')))}"
    directory.mkdir(parents=True)
    stderr = open(directory / "stderr.txt", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "crawlkit", "testweb", "--dir", str(directory), *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    web: TestWeb | None = None
    try:
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise RuntimeError("testweb did not become ready in time")
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                err = (directory / "stderr.txt").read_text(errors="replace")
                raise RuntimeError(f"testweb exited before ready: {err.strip()}")
            line += chunk
        sel.close()
        info = json.loads(line.split(b"\n", 1)[0])
        web = TestWeb(proc, info, directory)
        yield web
    finally:
        if web is not None:
            web.stop()
        elif proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stdout:
            proc.stdout.close()
        stderr.close()


@pytest.fixture
def testweb(tmp_path: Path) -> Iterator[TestWeb]:
    """A small web: 3 ordinary hosts, about 20 pages each, every special host."""
    with start_testweb(tmp_path, "--hosts", "3", "--pages", "20") as web:
        yield web


#: A route of this content type answers with its body alone, no status line or
#: headers: a broken server (the client gets no status).
RAW = "raw"


class _RoutesHandler(BaseHTTPRequestHandler):
    routes: dict[str, tuple[str, bytes]]
    log: list[str]

    def do_GET(self) -> None:
        self.log.append(self.path)
        found = self.routes.get(self.path)
        ctype, body = found if found is not None else ("text/plain", b"")
        if ctype == RAW:
            self.wfile.write(body)
            return
        self.send_response(200 if found is not None else 404)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve_routes(routes: dict[str, tuple[str, bytes]]) -> Iterator[tuple[str, list[str]]]:
    """A small site on 127.0.0.1: ``routes`` maps a path to (content type, body) (see
    :data:`RAW`), any other path is a 404. Yields the root URL (``http://127.0.0.1:PORT``,
    no slash) and the paths asked, in order: the request log that judges a test."""
    log: list[str] = []
    handler = type("Handler", (_RoutesHandler,), {"routes": routes, "log": log})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", log
    finally:
        server.shutdown()
        server.server_close()


def fetch_loopback(state: Path, urls: Iterable[str], *extra: str) -> Result:
    """``crawlkit fetch`` of ``urls`` (given on stdin) from servers on 127.0.0.1, as
    :func:`serve_routes` runs them: loopback allowed, a 0.05 s gap per host."""
    return crawlkit(
        *("fetch", "--state", str(state), "--allow-net", "127.0.0.0/8", "--min-delay", "0.05s"),
        *extra,
        input="".join(f"{url}\n" for url in urls).encode(),
    )


def start_crawlkit(*args: str, **popen: Any) -> subprocess.Popen:
    """``python -m crawlkit ARGS`` started in the background (its output dropped unless
    ``popen`` says otherwise): for a test that acts while the command runs."""
    popen.setdefault("stdout", subprocess.DEVNULL)
    popen.setdefault("stderr", subprocess.DEVNULL)
    return subprocess.Popen([sys.executable, "-m", "crawlkit", *args], cwd=ROOT, **popen)


def crawl_loopback(seed: str, state: Path, *extra: str) -> Result:
    """``crawlkit crawl`` of ``seed`` (a URL or a seeds file) on servers on 127.0.0.1, as
    :func:`serve_routes` runs them: loopback allowed, a 0.05 s gap per host."""
    return crawlkit(
        *("crawl", seed, "--state", str(state), "--allow-net", "127.0.0.0/8"),
        *("--min-delay", "0.05s", *extra),
    )
