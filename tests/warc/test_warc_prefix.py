"""``--warc-prefix`` is checked before any request (issue 15 item 6)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import crawlkit

from crawlkit.errors import UsageError
from crawlkit.warc.write import MAX_PREFIX, WarcWriter, check_warc_prefix


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)  # counted before the answer, so a client saw it
        body = b"<html><body>hi</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("H", (_Counting,), {"hits": hits})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/page", hits
    finally:
        httpd.shutdown()
        httpd.server_close()


def _fetch(tmp_path: Path, url: str, prefix: str):
    return crawlkit(
        "fetch",
        "--state",
        str(tmp_path / "state"),
        "--warc-dir",
        str(tmp_path / "warc"),
        "--allow-net",
        "127.0.0.1/32",
        "--min-delay",
        "0",
        "--warc-prefix",
        prefix,
        "-q",
        input=url.encode() + b"\n",
    )


@pytest.mark.parametrize(
    "prefix", ["../../x", "/tmp/abs", "a/b", "x" * (MAX_PREFIX + 1), "", ".hidden", "-x"]
)
def test_a_bad_prefix_is_a_usage_error_before_any_request(
    tmp_path: Path, server: tuple[str, list[str]], prefix: str
) -> None:
    url, hits = server
    r = _fetch(tmp_path, url, prefix)
    assert r.code == 2, r.stderr
    assert r.stderr.startswith("crawlkit fetch: --warc-prefix must be a file name")
    assert hits == []
    assert not list(tmp_path.parent.glob("x*.warc.gz*"))
    assert not (tmp_path / "warc").exists() or not list((tmp_path / "warc").rglob("*.warc*"))


def test_a_good_prefix_names_the_files(tmp_path: Path, server: tuple[str, list[str]]) -> None:
    url, hits = server
    r = _fetch(tmp_path, url, "site-2026.v1_a+b")
    assert r.code == 0, r.stderr
    assert "/page" in hits
    names = [p.name for p in (tmp_path / "warc").rglob("*.warc.gz")]
    assert names and all(n.startswith("site-2026.v1_a+b-") for n in names)


def test_the_library_refuses_too() -> None:
    assert check_warc_prefix("crawlkit") == "crawlkit"
    with pytest.raises(UsageError):
        WarcWriter("/nonexistent", prefix="../x")
