"""`crawl SEEDS`: seed URLs, files of them, or standard input."""

from __future__ import annotations

from pathlib import Path

from conftest import crawlkit, serve_routes

PAGE = b"<!doctype html><title>a</title><body>a</body>"


def test_seeds_from_standard_input(tmp_path: Path) -> None:
    """SEEDS "-" is standard input, as every stage's "-" is (a seeds file piped in)."""
    with serve_routes({"/a.html": ("text/html", PAGE)}) as (root, log):
        res = crawlkit(
            "crawl",
            "-",
            "--state",
            str(tmp_path / "s"),
            "--min-delay",
            "0.05s",
            "--allow-net",
            "127.0.0.0/8",
            "--json",
            input=f"# from a pipe\n{root}/a.html\n".encode(),
            timeout=120,
        )
    assert res.code == 0, res.stderr
    assert log[:2] == ["/robots.txt", "/a.html"], log
    twice = crawlkit("crawl", "-", "-", "--state", str(tmp_path / "t"), input=b"")
    assert twice.code == 2 and "standard input" in twice.stderr
