"""State directory locks: one owning process, re-entrant inside it, gone with the owner."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crawlkit.errors import LockedError
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
        [sys.executable, "-c", "import sys; from crawlkit.state import open_state; "
         "open_state(sys.argv[1])", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode != 0 and "LockedError" in proc.stderr  # outer still holds it
    outer.close()
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from crawlkit.state import open_state; "
         "open_state(sys.argv[1])", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
