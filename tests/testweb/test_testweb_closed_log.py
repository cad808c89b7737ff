"""``crawlkit testweb --log /dev/stdout | head``: the reader of the request log gone
stops the web, quietly, as SIGTERM does."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path

from conftest import poll_until


def _get(addr: str, port: int, host: str) -> None:
    conn = http.client.HTTPConnection(addr, port, timeout=30)
    try:
        conn.request("GET", "/", headers={"Host": f"{host}:{port}"})
        conn.getresponse().read()
    finally:
        conn.close()


def test_the_reader_of_the_log_gone_stops_the_web_quietly(tmp_path: Path) -> None:
    """Each event-loop turn's flush of the log raised BrokenPipeError into the loop
    again: a traceback per turn on stderr, and the web served on for its whole
    --for (here 10 minutes)."""
    web = tmp_path / "web"
    testweb = f"{sys.executable} -m crawlkit testweb --dir {web} --hosts 2 --pages 5 --for 600s"
    line = f"{testweb} --log /dev/stdout 2>{tmp_path / 'err'} | head -3; exit ${{PIPESTATUS[0]}}"
    proc = subprocess.Popen(["bash", "-c", line], stdout=subprocess.PIPE)
    try:
        # (head passes its lines on only as it ends: the web's files tell it is up)
        poll_until((web / "seeds.txt").exists, proc, "the web is up")
        manifest = json.loads((web / "manifest.json").read_text())
        host, port = manifest["hosts"][0], manifest["port"]
        served = 0
        # Every request is logged; the third line ends head, a later flush meets the
        # closed pipe and the web stops: its port refuses the next connection. The
        # request whose log line met the closed pipe may be reset instead of answered
        # (the web stopped while serving it): the next connection then tells.
        for _ in range(2_000):
            try:
                _get(host["addr"], port, host["name"])
            except ConnectionRefusedError:
                break
            except ConnectionResetError:  # (http.client's RemoteDisconnected is one)
                continue
            served += 1
        assert 2 <= served < 2_000
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        ready, *logged = (json.loads(line) for line in out.splitlines())
        assert ready["port"] == port and [r["path"] for r in logged] == ["/", "/"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()  # (left open, a failure here became another test's warning)
    assert (tmp_path / "err").read_text() == ""
