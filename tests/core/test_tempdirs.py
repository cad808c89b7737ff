"""crawlkit.tempdirs: a crawl works under a private temporary directory, and what a
crawl killed with SIGKILL left there is removed by the next crawl."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, start_testweb, wait_until_locked

from crawlkit.tempdirs import LOCK, PREFIX, private_temp_dir, sweep


def _made(base: Path, held: bool) -> tuple[Path, int]:
    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT)
    if held:
        fcntl.flock(fd, fcntl.LOCK_EX)
    (path / "pymp-x").mkdir()
    return path, fd


def test_sweep_removes_only_the_directories_whose_owner_is_gone(tmp_path: Path) -> None:
    alive, fd_alive = _made(tmp_path, held=True)
    dead, fd_dead = _made(tmp_path, held=False)
    other = tmp_path / "crawlkit-not-ours"  # no lock file: left alone
    other.mkdir()
    try:
        assert sweep(tmp_path) == 1
        assert alive.exists() and other.exists() and not dead.exists()
    finally:
        os.close(fd_alive)
        os.close(fd_dead)


def test_the_private_directory_is_the_temp_dir_meanwhile_and_goes_after(monkeypatch) -> None:
    base = Path(tempfile.mkdtemp(prefix="ck-", dir="/tmp"))  # short: sockets go below it
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    monkeypatch.setenv("TMPDIR", str(base))
    try:
        with private_temp_dir() as path:
            assert path is not None and path.parent == base
            assert tempfile.gettempdir() == os.environ["TMPDIR"] == str(path)
            assert sweep(base) == 0  # its own lock is held
        assert not path.exists()
        assert tempfile.gettempdir() == os.environ["TMPDIR"] == str(base)
    finally:
        base.rmdir()


def test_a_base_too_long_for_a_socket_below_it_is_used_as_it_is(monkeypatch) -> None:
    long = Path(tempfile.mkdtemp(prefix="ck-" + "x" * 60, dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(long))
    try:
        with private_temp_dir() as path:
            assert path is None and tempfile.gettempdir() == str(long)
        assert list(long.iterdir()) == []
    finally:
        long.rmdir()


@pytest.mark.parametrize("command", ["crawl", "archive"])
def test_a_crawl_killed_with_sigkill_leaves_nothing_once_the_next_one_ran(
    tmp_path: Path, command: str
) -> None:
    temp = Path(tempfile.mkdtemp(prefix="ck-", dir="/tmp"))  # short: sockets go below it
    try:
        with start_testweb(tmp_path, "--hosts", "2", "--pages", "30", "--special", "none") as web:
            if command == "crawl":
                state = tmp_path / "state"
                args = ["crawl", str(web.seeds), "--state", str(state)]
            else:  # a crawl, then its report and WACZ
                first = web.seeds.read_text().split()[0]
                args = ["archive", first, str(tmp_path / "coll")]
                state = tmp_path / "coll" / "state"
            args += [
                "--min-delay",
                "0.2s",
                "--allow-net",
                web.info["allow_net"],
                "--hosts-file",
                str(web.hosts_file),
            ]
            env = {**os.environ, "TMPDIR": str(temp)}
            proc = subprocess.Popen(
                [sys.executable, "-m", "crawlkit", *args],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            wait_until_locked(state / "LOCK", proc)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            left = [p for p in temp.iterdir() if p.name.startswith(PREFIX)]
            assert len(left) == 1  # the killed crawl's directory
            done = subprocess.run(
                [sys.executable, "-m", "crawlkit", *args, "--for", "3s"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr.decode()
            # multiprocessing's own directory in it is gone first, without a traceback
            assert b"Traceback" not in done.stderr, done.stderr.decode()
        assert list(temp.iterdir()) == []  # swept at its start, its own gone at its end
    finally:
        subprocess.run(["rm", "-rf", str(temp)], check=False)
