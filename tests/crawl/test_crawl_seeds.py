"""`crawl SEEDS`: seed URLs, files of them, or standard input."""

from __future__ import annotations

from pathlib import Path

from conftest import RAW, crawl_loopback, crawlkit, serve_routes

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


def test_a_seeds_redirect_target_is_a_seed_to_the_scope(tmp_path: Path) -> None:
    """`http://old.test/` answering with a moved domain's page: under `--scope host`
    the target's host is crawled as a seed's (its own link to /a fetched), and the
    scope is no wider (a link to a third host is refused), from the server's log."""
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 old.test www.new.test other.test\n")
    routes: dict[str, tuple[str, bytes]] = {"/a": ("text/html", PAGE)}
    with serve_routes(routes) as (root, log):
        port = root.rsplit(":", 1)[1]
        moved = f"HTTP/1.0 301 Moved\r\nLocation: http://www.new.test:{port}/home\r\n\r\n"
        routes["/"] = (RAW, moved.encode())
        routes["/home"] = (
            "text/html",
            f'<title>home</title><a href="/a">a</a> <a href="http://other.test:{port}/other">o</a>'.encode(),
        )
        res = crawl_loopback(
            f"http://old.test:{port}/",
            tmp_path / "s",
            *("--hosts-file", str(hosts), "--scope", "host", "--json"),
        )
    assert res.code == 0, res.stderr
    assert "/home" in log and "/a" in log, log
    assert "/other" not in log, log


def test_a_damaged_seeds_file_is_said_and_exits_1_after_the_crawl(tmp_path: Path) -> None:
    """A seeds file cut short (gzip) was read up to the cut in silence (exit 0); a
    UTF-8 byte order mark (a Windows editor's) made the first seed no URL."""
    import gzip

    with serve_routes({"/a.html": ("text/html", PAGE), "/b.html": ("text/html", PAGE)}) as (
        root,
        log,
    ):
        whole = gzip.compress(
            f"\ufeff{root}/a.html\r\n".encode() + f"{root}/b.html\n".encode() * 400
        )
        seeds = tmp_path / "seeds.txt.gz"
        seeds.write_bytes(whole[: len(whole) - 12])
        res = crawl_loopback(str(seeds), tmp_path / "s")
    assert res.code == 1, res.stderr
    assert "gzip stream ends early" in res.stderr and "seeds were read up to damage" in res.stderr
    assert "/a.html" in log, (log, res.stderr)
