"""State directory locks: one owning process, re-entrant inside it, gone with the owner."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from crawlkit.errors import LockedError, StateError
from crawlkit.state import open_state

HOLD = textwrap.dedent(
    """
    import sys, time
    from crawlkit.state import open_state
    s = open_state(sys.argv[1])
    print("locked", flush=True)
    time.sleep(60)
    """
)


def _holder(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_second_process_is_refused_and_told_who_owns_it(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        with pytest.raises(LockedError, match=r"in use by another process \(pid \d+"):
            open_state(tmp_path)
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    # kill -9 releases the lock: no stale lock after a crash
    with open_state(tmp_path) as state:
        assert state.path == tmp_path


def test_lock_is_reentrant_within_a_process_and_released_by_the_last(tmp_path: Path) -> None:
    outer = open_state(tmp_path)
    inner = open_state(tmp_path / ".")
    inner.close()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from crawlkit.state import open_state; open_state(sys.argv[1])",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0 and "LockedError" in proc.stderr  # outer still holds it
    outer.close()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from crawlkit.state import open_state; open_state(sys.argv[1])",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_substate_sharers_coexist_and_exclude_the_owner_of_the_root(tmp_path: Path) -> None:
    from crawlkit.state import open_substate

    proc = _holder(tmp_path)  # another process owns the whole directory
    try:
        with (
            pytest.raises(LockedError, match="in use by another process"),
            open_substate(tmp_path, "dedup"),
        ):
            pass
        assert not (tmp_path / "dedup" / "LOCK").exists()  # refused before touching it
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    with open_substate(tmp_path, "dedup") as sub:
        assert sub.path == tmp_path / "dedup"
        share = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from crawlkit.state import open_state; "
                "open_state(sys.argv[1], shared=True)",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert share.returncode == 0, share.stderr  # sharers coexist
        own = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from crawlkit.state import open_state; open_state(sys.argv[1])",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert own.returncode != 0 and "LockedError" in own.stderr  # the owner waits
        with open_state(tmp_path) as inner:  # in this process: upgraded, shared
            assert inner.path == tmp_path


def _wait_for_owner(lock: Path, pid: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    """Wait until ``lock`` names ``pid`` (written right after the lock is taken)."""
    deadline = time.monotonic() + timeout
    while not (lock.exists() and lock.read_text().startswith(f"pid {pid} ")):
        assert proc.poll() is None, f"process {pid} ended before it took {lock}"
        assert time.monotonic() < deadline, f"{lock} never named pid {pid}"
        time.sleep(0.02)


def _crawl(web, state: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "crawlkit",
        "crawl",
        str(web.seeds),
        "--state",
        str(state),
        "--scope",
        "any",
        "--allow-net",
        web.info["allow_net"],
        "--hosts-file",
        str(web.hosts_file),
        "--timeout",
        "3s",
        *extra,
    ]


def test_dedup_on_the_state_of_a_running_crawl_is_refused_and_the_crawl_lives(
    tmp_path: Path,
) -> None:
    """dedup locked only S/dedup and was accepted; the crawl then died at its next dedup
    step ("state directory S/dedup is in use"). Now dedup is refused before it reads."""
    from conftest import ROOT, start_testweb

    with start_testweb(tmp_path, "--hosts", "2", "--pages", "10", "--special", "none") as web:
        state = tmp_path / "state"
        # a 0.3 s gap keeps the crawl busy through several dedup steps
        args = _crawl(web, state, "--min-delay", "0.3s", "--batch", "4", "--json")
        crawl = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            _wait_for_owner(state / "LOCK", crawl.pid, crawl)
            # stdin stays open: a dedup that was let in would hold S/dedup until killed
            dedup = subprocess.Popen(
                [sys.executable, "-m", "crawlkit", "dedup", "--state", str(state)],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            try:
                dedup.wait(timeout=30)
            except subprocess.TimeoutExpired:  # let in: it kept S/dedup from the crawl
                dedup.kill()
            _, err = dedup.communicate()
            assert dedup.returncode == 1, err.decode()
            assert f"state directory {state} is in use by another process (pid {crawl.pid}" in (
                err.decode()
            )
            # stages that wait for a lock (--lock-wait 1h) do not wait for a crawl
            from conftest import crawlkit

            for stage in (["frontier", "add", "--urls"], ["recrawl"], ["frontier", "next"]):
                res = crawlkit(*stage, "--state", str(state), input=b"", timeout=60)
                assert res.code == 1, res.stderr
                assert "a crawl keeps it for its whole run" in res.stderr
            out, cerr = crawl.communicate(timeout=180)
        finally:
            if crawl.poll() is None:
                crawl.kill()
                crawl.wait()
    assert crawl.returncode == 0, cerr.decode()
    import json

    summary = json.loads(out)
    assert summary["stopped"] == "frontier empty" and summary["fetched"] >= 20, summary


def test_a_crawl_is_refused_while_dedup_works_on_its_state(tmp_path: Path) -> None:
    from conftest import ROOT, start_testweb

    state = tmp_path / "state"
    dedup = subprocess.Popen(
        [sys.executable, "-m", "crawlkit", "dedup", "--state", str(state)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for_owner(state / "dedup" / "LOCK", dedup.pid, dedup)
        with start_testweb(tmp_path, "--hosts", "1", "--pages", "3", "--special", "none") as web:
            crawl = subprocess.run(_crawl(web, state), cwd=ROOT, capture_output=True, timeout=120)
            assert not web.requests()  # refused up front: not one request
        assert crawl.returncode == 1
        assert "in use by another process" in crawl.stderr.decode()
        page = b'{"url": "http://a.test/", "digest": "sha1:X", "simhash": "0000000000000001"}\n'
        out, err = dedup.communicate(page, timeout=60)
    finally:
        if dedup.poll() is None:
            dedup.kill()
            dedup.wait()
    assert dedup.returncode == 0, err.decode()
    assert b'"kind":"unique"' in out.replace(b" ", b"")


def test_a_regular_file_named_as_the_state_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("mine\n")
    with pytest.raises(StateError, match=r"notes\.txt is a file, not a state directory"):
        open_state(path)
    assert path.read_text() == "mine\n"  # nothing of it touched
