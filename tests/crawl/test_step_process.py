"""The dedup and recrawl steps in a process of their own (crawlkit/crawl/step_process.py).

It must give what the steps give on the post thread, say what they say, hand the
steps back when it dies without losing a fetch from the history or a page from the
dedup index, and end with the crawl when the crawl is killed.
"""

from __future__ import annotations

import os
import queue
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
from conftest import ROOT, start_testweb
from test_crawl import _crawl_args, _fetch_records

from crawlkit import streams
from crawlkit.crawl.step_process import StepProcess, dedup_cycle, recrawl_cycle
from crawlkit.dedup.store import DedupStore
from crawlkit.diag import NullReporter
from crawlkit.recrawl import History

T0 = 1_780_000_000.0
DAY = 86400.0


def _cycle(root: Path, name: str, at: float, changed: set[int]) -> Path:
    """A cut cycle's fetch log and pages: 30 URLs fetched at ``at`` (those in
    ``changed`` with a new digest), one deferred, one bad line."""
    cycle = root / name
    cycle.mkdir(parents=True)
    fetches, pages = [], []
    for i in range(30):
        url = f"https://s{i % 3}.test/p{i}"
        digest = f"sha1:{i}-{'new' if i in changed else 'old'}"
        fetches.append(
            {"url": url, "status": 200, "outcome": "fetched", "fetched_at": at, "digest": digest}
        )
        pages.append({"url": url, "digest": digest, "simhash": f"{i * 7919:016x}"})
    fetches.append({"url": "https://s0.test/later", "outcome": "deferred", "retry_at": at + 60})
    log = b"".join(orjson.dumps(r) + b"\n" for r in fetches) + b"{not json\n"
    (cycle / "fetch.ndjson").write_bytes(log)
    with streams.open_output(cycle / "pages.ndjson.zst") as out:
        for page in pages:
            out.write(orjson.dumps(page) + b"\n")
    return cycle


def _table(directory: Path) -> list[tuple]:
    db = sqlite3.connect(directory / "history.sqlite")
    try:
        return db.execute("SELECT * FROM history ORDER BY fp").fetchall()
    finally:
        db.close()


def test_the_process_gives_what_the_step_gives_here(tmp_path: Path) -> None:
    here_dir, there_dir = tmp_path / "here", tmp_path / "there"
    here = History(here_dir)
    there = StepProcess(tmp_path / "dedup", there_dir)
    told_here, told_there = NullReporter(), NullReporter()
    try:
        emitted = 0
        for n, (at, now, changed) in enumerate(
            [
                (T0, T0 + 60, set()),
                (T0 + DAY, T0 + 2 * DAY, {1, 2, 3, 10}),
                (T0 + 5 * DAY, T0 + 12 * DAY, {1, 2}),
            ]
        ):
            cycles = [
                _cycle(tmp_path / side, f"{n:06d}", at, changed)
                for side in ("here-cycles", "there-cycles")
            ]
            due_here = recrawl_cycle(here, cycles[0], now, 0.0, told_here)
            due_there = there.take(there.start_recrawl(cycles[1], now, 0.0), told_there)
            assert due_there == due_here
            emitted += len(due_here)
    finally:
        here.close()
        there.close()
    assert emitted > 0  # the comparison covered due URLs, not only empty lists
    assert not there.died
    # The same history, row for row; the deferred URL is in neither.
    rows = _table(there_dir)
    assert rows == _table(here_dir) and len(rows) == 30
    assert not any("later" in str(row[1]) for row in rows)
    # The bad line of each log was said, once per cycle, through the caller's reporter.
    assert told_there.bad_records == told_here.bad_records == 3
    # Closing the process closed its history, which saved the planning columns for
    # the next run: the same as those saved here.
    loaded = [History(d) for d in (here_dir, there_dir)]
    tables = [h.table() for h in loaded]
    assert [h.columns_from for h in loaded] == ["file", "file"]
    assert list(tables[0].fp) == list(tables[1].fp) and list(tables[0].due) == list(tables[1].due)
    for h in loaded:
        h.close()


def _pages(cycle: Path, start: int) -> None:
    """Page records with exact copies (same digest), near copies (simhash 1 bit
    apart), a bad simhash and a line that is no record."""
    cycle.mkdir(parents=True)
    with streams.open_output(cycle / "pages.ndjson.zst") as out:
        for i in range(start, start + 40):
            page = {
                "url": f"https://s{i % 4}.test/d{i}",
                "site": f"s{i % 4}.test",
                "digest": f"sha1:{i % 25}",
                "simhash": f"{(0xF0F0F0F0F0F0F0F0 ^ (1 << (i % 3))) if i % 7 else i:016x}",
                "text_bytes": 100,
            }
            if i == start + 5:
                page["simhash"] = "zz"
            out.write(orjson.dumps(page) + b"\n")
        out.write(b"[1, 2]\n")


def test_the_process_dedups_what_the_step_dedups_here(tmp_path: Path) -> None:
    here = DedupStore(tmp_path / "here")
    there = StepProcess(tmp_path / "there", tmp_path / "history")
    told_here, told_there = NullReporter(), NullReporter()
    totals = {"exact": 0, "near": 0, "unique": 0}
    try:
        for n in range(3):
            cycles = [tmp_path / side / f"{n:06d}" for side in ("here-cycles", "there-cycles")]
            for cycle in cycles:
                _pages(cycle, 30 * n)
            done_here = dedup_cycle(here, cycles[0], told_here)
            done_there = there.take(there.start_dedup(cycles[1]), told_there)
            assert done_there == done_here
            for name in ("dedup.ndjson.zst", "sites.ndjson.zst"):
                assert list(streams.read_records([cycles[1] / name])) == list(
                    streams.read_records([cycles[0] / name])
                )
            assert done_here.sites
            for key in totals:
                totals[key] += getattr(done_here, key)
    finally:
        here.close()
        there.close()
    assert min(totals.values()) > 0  # the comparison covered every kind of decision
    assert told_there.counts == told_here.counts
    assert told_here.counts["bad record"] == 3 and told_here.counts["bad simhash"] == 3
    # The index each committed is the same: opened again, the same pages and sites.
    again = [DedupStore(tmp_path / side) for side in ("here", "there")]
    assert again[0].n == again[1].n > 0 and again[0].sites == again[1].sites
    for store in again:
        store.close()


def test_a_dead_process_hands_the_step_back(tmp_path: Path) -> None:
    process = StepProcess(tmp_path / "dedup", tmp_path / "history")
    told = NullReporter()
    try:
        cycle = _cycle(tmp_path / "cycles", "000001", T0, set())
        assert process.take(process.start_recrawl(cycle, T0 + 60, 0.0), told) == []
        (pid,) = _holders(tmp_path / "history" / "history.sqlite")
        os.kill(pid, signal.SIGKILL)
        assert process.take(process.start_dedup(cycle), told) is None
        assert process.died
        assert process.start_recrawl(cycle, T0 + 60, 0.0) is None  # for good
    finally:
        process.close()


def test_a_recrawl_step_run_again_returns_what_it_emitted_before(tmp_path: Path) -> None:
    """A crash after the history committed and before the due URLs were queued: the
    history will not emit them for a day, and the step run again returns them from
    the cycle's due file."""
    history = History(tmp_path / "history")
    told = NullReporter()
    try:
        first = _cycle(tmp_path / "cycles", "000001", T0, set())
        recrawl_cycle(history, first, T0 + 60, 0.0, told)
        cycle = _cycle(tmp_path / "cycles", "000002", T0 + DAY, {1, 2})
        due = recrawl_cycle(history, cycle, T0 + 12 * DAY, 0.0, told)
        assert len(due) > 0
        assert recrawl_cycle(history, cycle, T0 + 12 * DAY, 0.0, told) == due
        # The history itself emits nothing again: only the file has them.
        again = _cycle(tmp_path / "cycles", "000003", T0 + DAY, set())
        assert recrawl_cycle(history, again, T0 + 12 * DAY, 0.0, told) == []
    finally:
        history.close()


def test_a_crawl_whose_step_process_is_killed_loses_no_fetch(tmp_path: Path) -> None:
    """kill -9 of the step process mid-crawl: the crawl goes on, its post thread runs
    the steps, every URL fetched is in the recrawl history and every page has its
    dedup record."""
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "30", "--special", "none") as web:
        state = tmp_path / "state"
        args = _crawl_args(web, state, "--min-delay", "0.25s", "--batch", "10")
        crawl = _start_crawl(args)
        try:
            history = state / "recrawl" / "history.sqlite"
            pid = _wait_for_step_process(crawl, history)
            assert crawl.poll() is None, "the crawl ended before the kill"
            os.kill(pid, signal.SIGKILL)
            killed_at = time.time()
            _out, err = crawl.communicate(timeout=180)
        finally:
            if crawl.poll() is None:
                crawl.kill()
                crawl.wait()
        assert crawl.returncode == 0, err.decode()[-2000:]
    # Cycles post-processed after the kill (by the post thread, then).
    done = [p.stat().st_mtime for p in state.glob("crawl/cycles/*/recrawl.done")]
    assert any(t > killed_at for t in done)
    fetched = {r["url"] for r in _fetch_records(state) if r.get("outcome") == "fetched"}
    assert len(fetched) >= 50
    tracked = {row[1] for row in _table(state / "recrawl")}
    assert fetched <= tracked
    pages = [
        r["url"]
        for p in state.glob("crawl/cycles/*/pages.ndjson.zst")
        for r in streams.read_records([p])
    ]
    deduped = [
        r["url"]
        for p in state.glob("crawl/cycles/*/dedup.ndjson.zst")
        for r in streams.read_records([p])
    ]
    assert len(pages) >= 50 and sorted(deduped) == sorted(pages)
    # The crawl took the dedup index's writer lock when it opened the index itself
    # (for a cycle deduplicated after the kill, so by this process).
    assert any(p.stat().st_mtime > killed_at for p in state.glob("crawl/cycles/*/dedup.done"))
    lock = (state / "dedup" / "LOCK").read_text()
    assert lock.startswith(f"pid {crawl.pid} ") and "(dedup writer)" in lock


def test_the_step_process_ends_with_a_killed_crawl(tmp_path: Path) -> None:
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "30", "--special", "none") as web:
        state = tmp_path / "state"
        args = _crawl_args(web, state, "--min-delay", "0.25s", "--batch", "10")
        crawl = _start_crawl(args)
        history = state / "recrawl" / "history.sqlite"
        try:
            step = os.pidfd_open(_wait_for_step_process(crawl, history))
        finally:
            crawl.kill()  # kill -9 of the crawl alone, not of its process group
            crawl.communicate()
        # The step process ends once the crawl is gone (it watches its owner twice a
        # second): its pidfd becomes readable when it exits.
        try:
            assert select.select([step], [], [], 30)[0], "the step process outlived the crawl"
        finally:
            os.close(step)
        assert _holders(history) == set()


def test_the_next_run_waits_for_a_killed_crawls_step_process(tmp_path: Path) -> None:
    """A killed crawl lets go of its state at once, but its step process lives on until
    its orphan watch sees the crawl gone, and may be inside a dedup commit: the next
    run's step process waits for it to end before it opens the dedup index."""
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "30", "--special", "none") as web:
        state = tmp_path / "state"
        args = _crawl_args(web, state, "--min-delay", "0.25s", "--batch", "10")
        # No pipes: the step process shares the crawl's, and a reader of them would
        # wait for it, stopped below, as well.
        first = subprocess.Popen([sys.executable, "-m", "crawlkit", *args], cwd=ROOT)
        try:
            orphan = _wait_for_step_process(first, state / "recrawl" / "history.sqlite")
            os.kill(orphan, signal.SIGSTOP)  # an orphan slow to see its crawl gone
        finally:
            first.kill()
            first.wait()
        try:
            second = subprocess.Popen(
                [sys.executable, "-m", "crawlkit", *args], cwd=ROOT, stderr=subprocess.PIPE
            )
            lines, reader = _lines(second)
            said = _wait_for_line(lines, "is in use by another process", second)
            assert f"pid {orphan} " in said and "(dedup writer)" in said
            assert _alive(orphan)  # still there, stopped: nothing may have waited in vain
        finally:
            os.kill(orphan, signal.SIGCONT)  # it sees its crawl gone, and ends
        assert second.wait(timeout=120) == 0, b"".join(lines.queue).decode()
        reader.join(timeout=60)  # at the pipe's end once the crawl's processes are gone
        assert second.stderr is not None
        second.stderr.close()
    assert not _alive(orphan)
    lock = (state / "dedup" / "LOCK").read_text()
    assert "(dedup writer)" in lock and f"pid {orphan} " not in lock  # the next writer's
    store = DedupStore(state / "dedup")  # the index opens whole
    try:
        assert store.n >= 60  # every page of the web, deduplicated once or more
    finally:
        store.close()


def _lines(proc: subprocess.Popen[bytes]) -> tuple[queue.Queue[bytes], threading.Thread]:
    """The lines ``proc`` writes on stderr, as they come, and the thread reading them."""
    lines: queue.Queue[bytes] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader


def _wait_for_line(lines: queue.Queue[bytes], text: str, proc: subprocess.Popen[bytes]) -> str:
    """The first line holding ``text``; fails if none comes in 120 s."""
    deadline = time.monotonic() + 120
    seen = []
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=min(left, 1.0)).decode()
        except queue.Empty:
            assert proc.poll() is None or not lines.empty(), f"ended without {text!r}: {seen}"
            continue
        if text in line:
            return line
        seen.append(line)
    raise AssertionError(f"no line with {text!r} in 120 s: {seen}")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_crawl(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "crawlkit", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_for_step_process(crawl: subprocess.Popen[bytes], history: Path) -> int:
    """The pid of the crawl's step process, once it holds the history open (it starts
    at the first dedup step); the crawl itself holds it too. Only /proc shows that
    event, so it is looked for as ``wait_until_locked`` looks for a lock."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and crawl.poll() is None:
        others = _holders(history) - {crawl.pid}
        if others:
            (pid,) = others
            return pid
        time.sleep(0.05)
    raise AssertionError(f"no step process (crawl exit {crawl.poll()})")


def _holders(path: Path) -> set[int]:
    """The processes that have ``path`` open (from /proc)."""
    target = str(path.resolve()) if path.exists() else str(path)
    pids = set()
    for fds in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) == target for fd in fds.iterdir()):
                pids.add(int(fds.parent.name))
        except OSError:  # (a process that ended, or another user's)
            continue
    return pids


def test_a_sitemap_lastmod_in_a_cycles_links_makes_a_known_page_due(tmp_path: Path) -> None:
    """crawl fed its recrawl step the fetch log and pages only: a sitemap's newer
    lastmod for a page already fetched was dropped by seen-merge, and the page waited
    its whole interval (a helper's server log: fetched once)."""
    history = History(tmp_path / "history")
    try:
        first = _cycle(tmp_path / "cycles", "000001", T0, set())
        recrawl_cycle(history, first, T0 + 60, 0.0, NullReporter())
        later = tmp_path / "cycles" / "000002"
        later.mkdir()
        (later / "fetch.ndjson").write_bytes(b"")
        lastmod = {
            "url": "https://s1.test/p1",
            "reason": "sitemap",
            "lastmod": "2026-05-29T00:00:00Z",
        }
        plain = {"url": "https://s1.test/other", "reason": "link", "from": "https://s1.test/"}
        with streams.open_output(later / "links.ndjson.zst") as out:
            out.write(orjson.dumps(plain) + b"\n" + orjson.dumps(lastmod) + b"\n")
        due = recrawl_cycle(history, later, T0 + 2 * 3600, 0.0, NullReporter())
    finally:
        history.close()
    assert [r["url"] for r in due] == ["https://s1.test/p1"]


# Runs ``crawlkit ARGS`` and notes, when the post thread takes a cycle's dedup result
# from the step process, whether the cycle's seen merge is done by then.
CHILD_NOTING_THE_SEEN_MERGE = """
import json, sys
from crawlkit.crawl.files import is_done
from crawlkit.crawl.step_process import StepProcess
from crawlkit_cli.main import main

notes = open(sys.argv[1], "a")
real_start, real_take = StepProcess.start_dedup, StepProcess.take
dedups = {}

def start_dedup(self, cycle):
    started = real_start(self, cycle)
    if started is not None:
        dedups[id(started)] = cycle
    return started

def take(self, started, reporter):
    cycle = dedups.pop(id(started), None) if started is not None else None
    if cycle is not None:
        notes.write(json.dumps([cycle.name, is_done(cycle, "seen")]) + "\\n")
        notes.flush()
    return real_take(self, started, reporter)

StepProcess.start_dedup, StepProcess.take = start_dedup, take
sys.argv = ["crawlkit", *sys.argv[2:]]
main()
"""


def test_the_seen_merge_runs_while_the_step_process_dedups(tmp_path: Path) -> None:
    """The post thread sets the crawl's pace: it merges a cycle's links into the seen
    set while the step process dedups the cycle, instead of waiting for the dedup
    first; and the crawl still fetches every page once."""
    notes = tmp_path / "notes.ndjson"
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "25", "--special", "none") as web:
        state = tmp_path / "state"
        args = _crawl_args(web, state, "--batch", "10", "--per-host", "5")
        child = subprocess.run(
            [sys.executable, "-c", CHILD_NOTING_THE_SEEN_MERGE, str(notes), *args],
            cwd=ROOT,
            capture_output=True,
            timeout=180,
        )
        assert child.returncode == 0, child.stderr.decode()[-2000:]
        requested = [(q["host"], q["path"]) for q in web.requests() if q["path"] != "/robots.txt"]
    taken = [orjson.loads(line) for line in notes.read_bytes().splitlines()]
    assert len(taken) >= 3  # cycles deduplicated in the step process
    assert [name for name, seen in taken if not seen] == []
    # Each page once, from the server's view (a fetch cut by the 3 s timeout on a
    # loaded machine is retried: the design's second request, not the overlap's).
    retries = sum(r["outcome"] == "error" for r in _fetch_records(state))
    assert len(set(requested)) >= 40
    assert len(requested) - len(set(requested)) <= retries
