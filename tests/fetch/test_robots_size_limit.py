"""A robots.txt longer than the 512 KiB parsed: the line the limit cuts is dropped.

The fetcher read exactly 512 KiB, so the parser could not tell a file cut there from
one that ends there, and kept the cut line: ``Allow: /public-docs/only-this-page``
past the limit, cut to ``Allow: /p``, allowed ``/private`` under ``Disallow: /``.
"""

from __future__ import annotations

from pathlib import Path

from conftest import fetch_loopback, serve_routes

from crawlkit.robots import MAX_ROBOTS_BYTES


def _robots_cut_inside_an_allow() -> bytes:
    head = b"User-agent: *\nDisallow: /\nAllow: /$\n"
    tail = b"Allow: /public-docs/only-this-page\n"
    cut_after = b"Allow: /p"  # what the first MAX_ROBOTS_BYTES end with
    pad = MAX_ROBOTS_BYTES - len(head) - len(cut_after)
    comments = (b"#" * 99 + b"\n") * (pad // 100)
    comments += b"#" * (pad - len(comments) - 1) + b"\n"
    body = head + comments + tail
    assert body[:MAX_ROBOTS_BYTES].endswith(cut_after)
    return body


def test_the_line_cut_by_the_limit_allows_nothing(tmp_path: Path) -> None:
    routes = {
        "/robots.txt": ("text/plain", _robots_cut_inside_an_allow()),
        "/private": ("text/html", b"must not be asked"),
        "/": ("text/html", b"allowed by Allow: /$"),
    }
    with serve_routes(routes) as (root, log):
        result = fetch_loopback(tmp_path / "s", [f"{root}/private", f"{root}/"])
    assert result.code == 0, result.stderr
    assert log == ["/robots.txt", "/"]
