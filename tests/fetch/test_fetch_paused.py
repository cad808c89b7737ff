"""A fetch paused (SIGSTOP: Ctrl-Z, a paused container) and resumed is not a timeout.

The answer arrived while the process was stopped, but the monotonic clock ran on: on
SIGCONT every request in flight was past its deadline and recorded "timeout after
30s", its page retried an hour later and its host's last fetch time a minute (which
stretched the host's gap tenfold). The time the process did not run is kept out
(crawlkit/fetch/freeze.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from conftest import start_crawlkit

from crawlkit import streams

ASKED = threading.Event()


class _SlowPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/slow":
            ASKED.set()
            time.sleep(1.0)  # the server's own slowness: the answer comes 1 s later
        body = b"<p>late but here</p>" if self.path == "/slow" else b""
        self.send_response(200 if self.path == "/slow" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_pause_longer_than_the_timeout_is_not_a_timeout(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/slow"
    log = tmp_path / "fetched.ndjson"
    try:
        fetch = start_crawlkit(
            *("fetch", "--state", str(tmp_path / "s"), "--allow-net", "127.0.0.0/8"),
            *("--timeout", "3s", "--log", str(log), "-"),
            stdin=subprocess.PIPE,
        )
        assert fetch.stdin is not None
        fetch.stdin.write(f"{url}\n".encode())
        fetch.stdin.close()
        assert ASKED.wait(timeout=60), "the request never came"
        os.kill(fetch.pid, signal.SIGSTOP)
        try:
            time.sleep(6)  # the pause itself, twice the timeout (the stimulus, not a wait)
        finally:
            os.kill(fetch.pid, signal.SIGCONT)
        assert fetch.wait(timeout=60) == 0
    finally:
        server.shutdown()
        server.server_close()
    (record,) = streams.read_records([str(log)])
    assert record["error"] is None, record["error"]
    assert (record["outcome"], record["status"]) == ("fetched", 200)
    # The host's time without the pause: with it, 6,000 ms or more (the pause alone).
    # Bounded by the pause, not by the server's 1 s, so a loaded machine passes too.
    assert record["elapsed_ms"] < 6000
