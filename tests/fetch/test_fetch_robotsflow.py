"""crawlkit.fetch.robotsflow through ``crawlkit fetch`` against a loopback server: a
robots.txt cut off mid-body, or one that cannot be had, defers its origin's URLs at
once and nothing but robots.txt is requested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


class CutRobotsServer:
    """A loopback HTTP server whose robots.txt promises 200 bytes (the full file
    disallows /private/), sends ``User-agent: *`` and then resets the connection
    (``how="reset"``) or goes silent (``how="stall"``); with ``how="reset-unframed"``
    it promises no length (the close ends the body) and resets. Pages answer 200.
    ``paths`` is the server's request log, in arrival order."""

    FULL = b"User-agent: *\nDisallow: /private/\n"

    def __init__(self, how: str) -> None:
        import socket as socketlib
        import threading

        self.how = how
        self.paths: list[str] = []
        self._stop = threading.Event()
        self._sock = socketlib.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        import threading

        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, conn) -> None:
        import socket as socketlib
        import struct

        conn.settimeout(10)
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk
            path = head.split(b" ", 2)[1].decode()
            self.paths.append(path)
            if path != "/robots.txt":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                return
            length = b"" if self.how == "reset-unframed" else b"Content-Length: 200\r\n"
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + length + b"\r\nUser-agent: *\n"
            )
            if self.how.startswith("reset"):  # RST, not FIN: SO_LINGER with a zero timeout
                conn.setsockopt(socketlib.SOL_SOCKET, socketlib.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                self._stop.wait(10)  # silent until the client gives up (or the test ends)

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        for t in self._threads:
            t.join(12)


@pytest.mark.parametrize("how", ["reset", "reset-unframed", "stall"])
def test_a_robots_txt_cut_off_mid_body_is_a_network_error(tmp_path: Path, how: str) -> None:
    """The cut file says only ``User-agent: *`` (no rules); used as complete, it would
    let /private/ through. A cut robots.txt disallows all and is retried later: the
    server sees no request but robots.txt."""
    from conftest import crawlkit

    server = CutRobotsServer(how)
    try:
        hosts = tmp_path / "hosts"
        hosts.write_text("127.0.0.1 cut.test\n")
        urls = [f"http://cut.test:{server.port}/private/page", f"http://cut.test:{server.port}/"]
        res = crawlkit(
            "fetch",
            "--state",
            str(tmp_path / "s"),
            "--hosts-file",
            str(hosts),
            "--allow-net",
            "127.0.0.1/32",
            "--timeout",
            "1s",
            "--min-delay",
            "0.05s",
            "--delay-factor",
            "1",
            input="".join(u + "\n" for u in urls).encode(),
        )
    finally:
        server.close()
    assert res.code == 0, res.stderr
    out = [json.loads(line) for line in res.lines]
    assert server.paths == ["/robots.txt"], server.paths
    assert sorted(r["url"] for r in out) == sorted(urls)
    for r in out:
        assert r["outcome"] == "deferred" and r["retry_at"], r
        assert "robots.txt unavailable" in r["error"], r


def test_urls_behind_an_unreachable_robots_txt_are_deferred_at_once(tmp_path: Path) -> None:
    """A robots.txt that times out (1 s) made the host's URLs wait its next turn, ten
    times that, before they were deferred; with --for 5s they came out deferred for
    the run's end instead, with the wrong reason. They are deferred when robots.txt
    fails, for robots.txt."""
    from conftest import crawlkit

    server = CutRobotsServer("stall")
    try:
        hosts = tmp_path / "hosts"
        hosts.write_text("127.0.0.1 cut.test\n")
        urls = [f"http://cut.test:{server.port}/a", f"http://cut.test:{server.port}/b"]
        res = crawlkit(
            "fetch",
            "--state",
            str(tmp_path / "s"),
            "--hosts-file",
            str(hosts),
            "--allow-net",
            "127.0.0.1/32",
            "--timeout",
            "1s",
            "--for",
            "5s",
            input="".join(u + "\n" for u in urls).encode(),
        )
    finally:
        server.close()
    assert res.code == 0, res.stderr
    out = [json.loads(line) for line in res.lines]
    assert server.paths == ["/robots.txt"]
    assert [r["outcome"] for r in out] == ["deferred", "deferred"]
    assert all("robots.txt unavailable" in r["error"] for r in out), out
