"""Every stage that writes records to stdout, read by ``head -1`` and ``head -c 100``
in a real shell pipeline, with more output than a pipe holds (64 KiB).

The convention (cli/main.py, README "Exit status"): a reader that goes away is a
normal end, exit 0 with nothing said, and leaves no temporary or ``.open`` file; a
stage with --state commits nothing it has not handed on (checked here by what the
next run does). A status decided before the output (audit's verdict, a crawl's
failure) stands. The stages that also lose an output they were asked for, and fetch
and frontier add, have their own tests (tests/cli/test_output_targets.py,
tests/fetch/test_fetch_closed_pipe.py, tests/frontier/test_frontier_closed_pipe.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import crawlkit

N = 4000  # records of each input: 300 KB and more out of every stage below
READERS = ("head -1", "head -c 100")


def _inputs(d: Path) -> None:
    """URLs, link, page and fetch records, a sitemap, a robots.txt and a WARC in ``d``."""
    urls = [f"http://h{i % 40}.test/p/{i}" for i in range(N)]
    (d / "urls.txt").write_text("".join(f"{u}\n" for u in urls))
    (d / "robots.txt").write_text("User-agent: *\nDisallow: /p/1\n")
    with (d / "links.ndjson").open("wb") as f:
        for u in urls:
            f.write(orjson.dumps({"url": u, "from": u.rsplit("/", 2)[0] + "/", "reason": "link"}))
            f.write(b"\n")
    with (d / "pages.ndjson").open("wb") as f:
        for i, u in enumerate(urls):
            rec = {"url": u, "digest": f"sha1:{i % 3000:032d}", "simhash": f"{i * 7919:016x}"}
            f.write(orjson.dumps({**rec, "text_bytes": 100}) + b"\n")
    with (d / "fetched.ndjson").open("wb") as f:
        for i, u in enumerate(urls):
            at = f"2026-12-01T00:{i % 60:02d}:00.000Z"
            rec = {"url": u, "status": 200, "outcome": "fetched", "fetched_at": at}
            f.write(orjson.dumps({**rec, "digest": f"sha1:{i:032d}", "warc": None}) + b"\n")
    (d / "sitemap.xml").write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>{u}</loc></url>" for u in urls)
        + "</urlset>"
    )
    records = []
    for i, u in enumerate(urls[:2000]):
        page = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<title>t</title><a href=/x>x</a>"
        head = (
            f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: {u}\r\n"
            f"WARC-Date: 2026-12-02T01:02:03Z\r\nWARC-Record-ID: <urn:uuid:{i}>\r\n"
            "Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(page)}\r\n\r\n"
        )
        records.append(head.encode() + page + b"\r\n\r\n")
    (d / "many.warc").write_bytes(b"".join(records))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("inputs")
    _inputs(d)
    return d


def _queue(state: Path, inputs: Path) -> None:
    res = crawlkit("frontier", "add", "-q", "--state", str(state), str(inputs / "links.ndjson"))
    assert res.code == 0, res.stderr


# name: (command after `crawlkit`, with {i} for the inputs and {s} for a state)
STAGES = {
    "canon": "canon {i}/urls.txt",
    "canon --json": "canon --json {i}/urls.txt",
    "robots check": "robots check --robots {i}/robots.txt --agent a < {i}/urls.txt",
    "sitemap": "sitemap {i}/sitemap.xml",
    "frontier next": "frontier next -q --state {s} --max 9999 --per-host 0 --no-budgets",
    "dedup": "dedup -q --state {s} {i}/pages.ndjson",
    "seen-merge": "seen-merge --state {s} {i}/links.ndjson",
    "recrawl": "recrawl -q --state {s} {i}/fetched.ndjson {i}/pages.ndjson",
    "index": "index -q {i}/many.warc",
    "extract": "extract -q {i}/many.warc",
    "extract -j 2": "extract -q -j 2 {i}/many.warc",
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("stage", list(STAGES))
def test_a_reader_that_goes_away_is_a_quiet_normal_end(
    stage: str, reader: str, inputs: Path, tmp_path: Path
) -> None:
    state = tmp_path / "s"
    if stage == "frontier next":
        _queue(state, inputs)
    cmd = STAGES[stage]
    run = f"{sys.executable} -m crawlkit {cmd.format(i=inputs, s=state)}"
    line = f"{run} | {reader} >/dev/null; exit ${{PIPESTATUS[0]}}"
    proc = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, "")
    left = [p for p in tmp_path.rglob("*") if p.name.endswith((".tmp", ".open"))]
    assert left == []
    if state.exists():  # nothing handed on, nothing committed: the next run does it all
        fresh = tmp_path / "fresh"
        if stage == "frontier next":
            _queue(fresh, inputs)
        again, first = (crawlkit(*cmd.format(i=inputs, s=s).split()) for s in (state, fresh))
        assert again.code == 0, again.stderr
        assert _urls(again.lines) == _urls(first.lines) and len(again.lines) >= N // 2


def _urls(lines: list[str]) -> list[str]:
    return sorted(orjson.loads(line)["url"] for line in lines)


def _status(line: str, *, unbuffered: bool) -> tuple[int, str]:
    """The exit status and stderr of the first command of ``line`` run by bash, with
    Python's stdout buffered (as a user's shell runs it) or not (PYTHONUNBUFFERED)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.run(
        ["bash", "-c", f"{line}; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("unbuffered", [False, True])
@pytest.mark.parametrize("form", ["", "--json"])
def test_a_closed_pipe_does_not_pass_a_failed_audit(
    form: str, unbuffered: bool, tmp_path: Path
) -> None:
    """`crawlkit audit ... | head` of a log with violations exited 0 (the report's
    write met the closed pipe, and that was taken for a normal end), so `set -o
    pipefail` passed a failed audit. The verdict is known before the report is
    written: it stands."""
    log = tmp_path / "fetched.ndjson"
    with log.open("wb") as f:  # 1,000 hosts, 4 requests each at once: 1,000 violations
        for i in range(4000):
            at = f"2026-12-01T00:00:{i // 1000:02d}.000Z"
            rec = {"url": f"http://h{i % 1000}.test/{i}", "status": 200, "fetched_at": at}
            f.write(orjson.dumps({**rec, "outcome": "fetched"}) + b"\n")
    audit = f"{sys.executable} -m crawlkit audit --fetch-log {log} {form}"
    assert _status(f"{audit} >/dev/null", unbuffered=unbuffered) == (1, "")
    assert _status(f"{audit} | head -1 >/dev/null", unbuffered=unbuffered) == (1, "")


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_closed_pipe_does_not_pass_a_failed_crawl(unbuffered: bool, tmp_path: Path) -> None:
    """`crawlkit crawl --json S | true` of a crawl that fails (here: its seeds file is
    cut) exited 0, its summary's write or the last flush meeting the closed pipe."""
    import gzip

    seeds = tmp_path / "seeds.gz"
    seeds.write_bytes(gzip.compress(b"http://a.test/\nhttp://b.test/\n")[:30])
    crawl = f"{sys.executable} -m crawlkit crawl {seeds} --state {tmp_path / 's'} --json"
    code, err = _status(f"{crawl} | true", unbuffered=unbuffered)
    assert code == 1
    assert err.splitlines()[-1] == (
        "crawlkit crawl: the seeds were read up to damage (see above); fix them and run again"
    )


def test_a_closed_pipe_keeps_the_status_of_a_damaged_input(tmp_path: Path) -> None:
    """`canon cut.gz big.txt | head -1` said the damage on stderr and exited 0; read
    to the end it exits 1 (docs/design.md), and a reader gone does not change that."""
    import gzip

    cut = tmp_path / "cut.gz"
    # (cut before its first 8 KiB of output: read before stdout's first write fails)
    whole = gzip.compress(b"".join(b"http://a.test/%d\n" % i for i in range(100)))
    cut.write_bytes(whole[: len(whole) // 2])
    big = tmp_path / "big.txt"
    big.write_bytes(b"".join(b"http://b.test/%d\n" % i for i in range(N * 5)))
    canon = f"{sys.executable} -m crawlkit canon {cut} {big}"
    for line in (f"{canon} >/dev/null", f"{canon} | head -1 >/dev/null"):
        code, err = _status(line, unbuffered=False)
        assert code == 1, (line, err)
        assert len(err.splitlines()) == 1 and "gzip stream ends early" in err
