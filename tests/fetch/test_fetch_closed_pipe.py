"""``crawlkit fetch B | head -1``: a reader that goes away ends the fetch quietly, with
its WARC file finished under its normal name and its host state committed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
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


def test_head_closing_the_fetch_log_finishes_the_warc_and_commits_the_state(
    tmp_path: Path,
) -> None:
    """The WARC file was left as ``*.warc.gz.open`` (the run's end never ran), so the
    pages fetched were in a file no tool takes as done."""
    routes = {f"/p{i}": ("text/html", b"<title>%d</title>" % i) for i in range(PAGES)}
    routes["/robots.txt"] = ("text/plain", b"User-agent: *\nAllow: /\n")
    state, batch = tmp_path / "s", tmp_path / "batch.txt"
    new = state / "warc" / "new"
    fetch = f"{sys.executable} -m crawlkit fetch --state {state} --allow-net 127.0.0.0/8"
    with serve_routes(routes) as (root, log):
        batch.write_text("".join(f"{root}/p{i}\n" for i in range(PAGES)))
        proc = subprocess.run(
            ["bash", "-c", f"{fetch} {batch} --min-delay 0.05s | head -1; exit ${{PIPESTATUS[0]}}"],
            capture_output=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == b""  # a normal end: nothing said
        first = orjson.loads(proc.stdout)
        assert first["outcome"] == "fetched"
        assert sorted(p.name for p in new.iterdir()) == [first["warc"]["file"]]
        # the record the reader got points at its response in the finished file
        with (new / first["warc"]["file"]).open("rb") as f:
            f.seek(first["warc"]["offset"])
            rec = next(iter(ArchiveIterator(f)))
            assert rec.rec_headers.get_header("WARC-Target-URI") == first["url"]
        # every page the server gave is archived; the fetch stopped, not ran on
        archived = _archived(new)
        assert archived.pop(f"{root}/robots.txt") == "response"
        pages = [path for path in log if path != "/robots.txt"]
        assert {f"{root}{path}" for path in pages} == set(archived)
        assert len(pages) < PAGES

        # The next run, given the URLs not in the WARC, starts from the committed state:
        # robots.txt comes from its cache, and no page is asked for twice.
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
        assert log.count("/robots.txt") == 1
        assert sorted(log) == sorted(["/robots.txt", *(f"/p{i}" for i in range(PAGES))])
        assert set(_archived(new)) == {
            f"{root}/robots.txt",
            *(f"{root}/p{i}" for i in range(PAGES)),
        }
    outcomes = [orjson.loads(line)["outcome"] for line in done.read_bytes().splitlines()]
    assert len(outcomes) == PAGES - len(pages) and set(outcomes) == {"fetched"}
    assert not list(new.glob("*.open"))
