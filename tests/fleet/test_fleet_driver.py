"""examples/fleet.sh against awkward paths, awkward flags and a SIGTERM (issue 25,
item 13), under xargs and GNU parallel (when installed; CI installs it)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, start_testweb, wait_until_locked
from fleet_helpers import fleet_env, net_flags

from crawlkit.errors import StateError
from crawlkit.state import open_state

EXAMPLES = ROOT / "examples"
SMALL = ("--hosts", "4", "--pages", "3", "--special", "none", "--seed", "5")
RUNNERS = [
    "xargs",
    pytest.param(
        "parallel",
        marks=pytest.mark.skipif(not shutil.which("parallel"), reason="no GNU parallel"),
    ),
]


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_fleet_dir_with_a_space_and_braces_in_the_crawl_flags(tmp_path: Path, runner):
    fleet = tmp_path / "my fleet {}"
    with start_testweb(tmp_path, *SMALL) as web:
        proc = subprocess.run(
            [
                str(EXAMPLES / "fleet.sh"),
                str(fleet),
                "2",
                str(web.seeds),
                *net_flags(web),
                "--exclude",
                "/never{}/",
                "--exclude",
                "{} ",
            ],
            env=fleet_env(RUNNER=runner, SLICE="5s", ROUNDS="4"),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for k in range(2):
        settings = orjson.loads((fleet / f"shard-{k}" / "crawl" / "settings.json").read_bytes())
        assert settings["settings"]["archive"]["excludes"] == ["/never{}/", "{} "]
        assert (fleet / f"shard-{k}.last.json").stat().st_size > 0
    assert "delivery failed" not in proc.stderr


@pytest.mark.parametrize("runner", RUNNERS)
def test_sigterm_to_the_driver_stops_its_shards_and_frees_their_state(tmp_path: Path, runner):
    fleet = tmp_path / "fleet"
    # slow enough that both shards are still crawling when the driver is stopped
    slow = ["--min-delay", "2s", "--delay-factor", "0"]
    # a file, not a pipe: waiting for a pipe's end waited for the shards too
    with start_testweb(tmp_path, *SMALL) as web, (tmp_path / "driver.err").open("w") as err:
        driver = subprocess.Popen(
            [str(EXAMPLES / "fleet.sh"), str(fleet), "2", str(web.seeds), *net_flags(web), *slow],
            env=fleet_env(RUNNER=runner, SLICE="60s"),
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
        try:
            for k in range(2):
                wait_until_locked(fleet / f"shard-{k}" / "LOCK", driver)
            crawls = [_owner(fleet / f"shard-{k}" / "LOCK") for k in range(2)]
            # both crawls are fetching (so past their start-up): each asked a robots.txt
            deadline = time.monotonic() + 60
            while len({q["host"] for q in web.requests()}) < 4:  # every host
                assert driver.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            driver.send_signal(signal.SIGTERM)
            driver.wait(timeout=60)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
    stderr = (tmp_path / "driver.err").read_text()
    assert driver.returncode == 143, stderr[-2000:]
    assert "stopped by SIGTERM" in stderr, stderr[-2000:]
    # Ended before the driver: under dash, `kill -0 -- -PGID` failed at once ("Illegal
    # number"), and the driver left its shards running behind it.
    assert not [pid for pid in crawls if _running(pid)], "shard crawls outlived the driver"
    for k in range(2):  # no shard is left running: the next run can take every state
        try:
            state = open_state(fleet / f"shard-{k}")
        except StateError as exc:
            pytest.fail(f"shard {k} is still held after the driver ended: {exc}")
        state.close()
        summary = orjson.loads((fleet / f"shard-{k}.last.json").read_bytes())
        assert summary["stopped"].startswith("interrupted"), summary["stopped"]


def _owner(lock: Path) -> int:
    """The pid a state directory's LOCK names ("pid N on HOST")."""
    return int(lock.read_text().split()[1])


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"
