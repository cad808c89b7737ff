"""Small things a new user hit (issue 15 item 15)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import crawlkit


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["canon", "--rules", "bogus"], "crawlkit canon: Invalid value for '--rules': 'bogus'"),
        (["frontier", "next", "--state", "S", "--max", "x"], "Invalid value for '--max': 'x'"),
        (["robots", "check", "--status", "x"], "Invalid value for '--status': 'x'"),
    ],
)
def test_usage_errors_name_no_env_var(args: list[str], message: str) -> None:
    r = crawlkit(*args)
    assert r.code == 2
    assert message in r.stderr
    assert "env var" not in r.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["report"],
        ["frontier", "stats"],
        # these two made the state (a LOCK, an empty history) and answered from it:
        # "URLs tracked: 0" and "seen": false, exit 0
        ["recrawl", "--stats"],
        ["seen-merge", "--contains", "http://a.test/"],
    ],
)
def test_a_mistyped_state_is_an_error_and_is_not_created(
    tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "sate"
    r = crawlkit(*command, "--state", str(missing))
    assert r.code == 1
    assert r.stdout == b""
    assert f"state directory {missing} does not exist" in r.stderr
    assert not missing.exists()
    r = crawlkit(*command, "--state", str(tmp_path))  # exists, but holds no state
    assert r.code == 1
    assert "is not a crawlkit state directory" in r.stderr


@pytest.mark.parametrize("command", [["report"], ["frontier", "stats"]])
def test_read_only_commands_do_not_promise_to_create_state(command: list[str]) -> None:
    r = crawlkit(*command, "--help")
    assert r.code == 0
    assert "created if missing" not in r.text
    assert "must exist" in r.text


def test_frontier_stats_of_a_real_state(tmp_path: Path) -> None:
    state = tmp_path / "S"
    assert (
        crawlkit(
            "frontier", "add", "--state", str(state), "--urls", input=b"http://a.example/\n"
        ).code
        == 0
    )
    r = crawlkit("frontier", "stats", "--state", str(state))
    assert r.code == 0, r.stderr
    assert b'"queued":1' in r.stdout
