"""``crawlkit fetch B | head -1`` (or ``head -c 100``): a reader that goes away ends
the fetch quietly, with its WARC file finished under its normal name and its host
state committed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import serve_routes
from warcio.archiveiterator import ArchiveIterator

PAGES = 200  # at a 0.05 s gap, 10 s of fetching: far more than a stop takes


def _archived(warc_dir: Path) -> dict[str, str]:
    """Target URI → record type of every response and revisit in the finished files."""
    found: dict[str, str] = {}
    for path in sorted(warc_dir.glob("*.warc.gz")):
        with path.open("rb") as f:
            for rec in ArchiveIterator(f):
                if rec.rec_type in ("response", "revisit"):
                    found[rec.rec_headers.get_header("WARC-Target-URI")] = rec.rec_type
    return found


def _fetch_into_head(fetch: str, batch: Path, reader: str) -> bytes:
    """Run ``FETCH BATCH | READER`` in bash; returns what the reader printed, after
    checking the fetch ended 0 with nothing on stderr (a normal end)."""
    line = f"{fetch} {batch} --min-delay 0.05s | {reader}; exit ${{PIPESTATUS[0]}}"
    proc = subprocess.run(["bash", "-c", line], capture_output=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert proc.stdout.startswith(b'{"url":"')
    return proc.stdout


@pytest.mark.parametrize("reader", ["head -1", "head -c 100"])
def test_head_closing_the_fetch_log_finishes_the_warc_and_commits_the_state(
    reader: str, tmp_path: Path
) -> None:
    """The WARC file was left as ``*.warc.gz.open`` (the run's end was left to the
    event loop's shutdown, which ran it only sometimes: 5 runs in 6 here), so the
    pages fetched were in a file no tool takes as done. Three fresh runs, so that a
    lucky one does not hide it."""
    routes = {f"/p{i}": ("text/html", b"<title>%d</title>" % i) for i in range(PAGES)}
    routes["/robots.txt"] = ("text/plain", b"User-agent: *\nAllow: /\n")
    batch = tmp_path / "batch.txt"
    with serve_routes(routes) as (root, log):
        batch.write_text("".join(f"{root}/p{i}\n" for i in range(PAGES)))
        for run in range(3):
            state = tmp_path / f"s{run}"
            new = state / "warc" / "new"
            fetch = f"{sys.executable} -m crawlkit fetch --state {state} --allow-net 127.0.0.0/8"
            asked = len(log)
            out = _fetch_into_head(fetch, batch, reader)
            files = sorted(p.name for p in new.iterdir())
            assert len(files) == 1 and files[0].endswith(".warc.gz")  # finished, not .open
            if reader == "head -1":  # the record read points at its response in that file
                first = orjson.loads(out)
                assert first["outcome"] == "fetched" and first["warc"]["file"] == files[0]
                with (new / files[0]).open("rb") as f:
                    f.seek(first["warc"]["offset"])
                    rec = next(iter(ArchiveIterator(f)))
                    assert rec.rec_headers.get_header("WARC-Target-URI") == first["url"]
            # every page the server gave is archived; the fetch stopped, not ran on
            archived = _archived(new)
            assert archived.pop(f"{root}/robots.txt") == "response"
            pages = [path for path in log[asked:] if path != "/robots.txt"]
            assert {f"{root}{path}" for path in pages} == set(archived)
            assert len(pages) < PAGES

        # The next run on the last state, given the URLs not in its WARC, starts from
        # the committed state: robots.txt comes from its cache, no page is asked twice.
        rest, done = tmp_path / "rest.txt", tmp_path / "done.ndjson"
        rest.write_text(
            "".join(f"{root}/p{i}\n" for i in range(PAGES) if f"{root}/p{i}" not in archived)
        )
        again = subprocess.run(
            ["bash", "-c", f"{fetch} {rest} --min-delay 0s --log {done} --quiet"],
            capture_output=True,
            timeout=120,
        )
        assert again.returncode == 0, again.stderr
        last = log[asked:]
        assert sorted(last) == sorted(["/robots.txt", *(f"/p{i}" for i in range(PAGES))])
        assert set(_archived(new)) == {
            f"{root}/robots.txt",
            *(f"{root}/p{i}" for i in range(PAGES)),
        }
    outcomes = [orjson.loads(line)["outcome"] for line in done.read_bytes().splitlines()]
    assert len(outcomes) == PAGES - len(pages) and set(outcomes) == {"fetched"}
    assert not list(new.glob("*.open"))


def _outbox(state: Path) -> set[str]:
    """The URLs in ``state``'s outboxes for other shards."""
    import zstandard

    urls: set[str] = set()
    for path in (state / "outbox").rglob("*.ndjson.zst"):
        data = zstandard.ZstdDecompressor().stream_reader(path.read_bytes()).read()
        urls |= {orjson.loads(line)["url"] for line in data.splitlines()}
    return urls


def test_head_closing_a_sharded_fetch_still_routes_other_shards_urls(tmp_path: Path) -> None:
    """`fetch --shard 0 --shards 2 B | head -1`: the refusals of URLs shard 1 owns met
    the closed pipe, and the outbox they go to as well was never written: those URLs
    were lost to the fleet. (No network: every name is a loopback address, refused.)"""
    urls, hosts = tmp_path / "urls.txt", tmp_path / "hosts"
    urls.write_text("".join(f"http://site{i}.test/p\n" for i in range(3000)))
    hosts.write_text("".join(f"127.0.0.9 site{i}.test\n" for i in range(3000)))
    fetch = f"{sys.executable} -m crawlkit fetch --shard 0 --shards 2 --hosts-file {hosts}"
    whole = tmp_path / "whole"
    full = subprocess.run(
        ["bash", "-c", f"{fetch} --state {whole} {urls} --quiet"],
        capture_output=True,
        timeout=120,
    )
    assert full.returncode == 0, full.stderr
    routed = {
        r["url"] for r in map(orjson.loads, full.stdout.splitlines()) if r.get("refused") == "shard"
    }
    assert len(routed) > 1000 and _outbox(whole) == routed
    piped = tmp_path / "piped"
    out = _fetch_into_head(f"{fetch} --state {piped}", urls, "head -1")
    assert orjson.loads(out)["refused"] == "shard"
    assert _outbox(piped) == routed


def test_a_fetch_waiting_out_a_crawl_delay_stops_when_its_reader_goes(tmp_path: Path) -> None:
    """The fetch found a closed stdout only at its next record: with a host's
    Crawl-delay of 30 s ahead it went on for 30 s, then made one more request nobody
    would read of. Now the reader's going (POLLERR on the pipe) stops it at once.
    a.test has one page; b.test's pages wait out its Crawl-delay after robots.txt."""
    fast = {"/robots.txt": ("text/plain", b"User-agent: *\nAllow: /\n"), "/a0": ("text/html", b"a")}
    slow = {"/robots.txt": ("text/plain", b"User-agent: *\nCrawl-delay: 30\n")}
    slow |= {f"/b{i}": ("text/html", b"b") for i in range(5)}
    hosts, batch, state = tmp_path / "hosts", tmp_path / "batch.txt", tmp_path / "s"
    hosts.write_text("127.0.0.1 a.test b.test\n")
    with serve_routes(fast) as (root_a, log_a), serve_routes(slow) as (root_b, log_b):
        port_a, port_b = root_a.rsplit(":", 1)[1], root_b.rsplit(":", 1)[1]
        batch.write_text(
            f"http://a.test:{port_a}/a0\n"
            + "".join(f"http://b.test:{port_b}/b{i}\n" for i in range(5))
        )
        fetch = f"{sys.executable} -m crawlkit fetch --state {state} --allow-net 127.0.0.0/8"
        out = _fetch_into_head(f"{fetch} --hosts-file {hosts}", batch, "head -1")
        assert orjson.loads(out)["url"] == f"http://a.test:{port_a}/a0"
        assert (log_a, log_b) == (["/robots.txt", "/a0"], ["/robots.txt"])
    files = sorted(p.name for p in (state / "warc" / "new").iterdir())
    assert len(files) == 1 and files[0].endswith(".warc.gz")
