"""crawlkit.frontier.commands: the inbox of operator commands, junk in it included."""

from __future__ import annotations

from pathlib import Path

from conftest import crawlkit

from crawlkit.frontier.commands import commands_waiting, post_command, read_commands


def test_junk_in_the_inbox_is_no_command_and_breaks_nothing(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    assert not commands_waiting(inbox)  # no inbox yet
    inbox.mkdir()
    (inbox / "1-bad.json").write_bytes(b"{not json")
    (inbox / "2-list.json").write_bytes(b"[1, 2]")  # JSON, not a command: raised before
    (inbox / "3-empty.json").write_bytes(b'{"op": "block", "target": "  "}')
    (inbox / "notes.txt").write_text("not a command file")
    assert read_commands(inbox, {"old.example"}).blocks == {"old.example"}
    assert read_commands(inbox, set()).files == []
    assert not commands_waiting(inbox)  # a waiting crawl is not woken by junk forever
    post_command(tmp_path, "block", "http://Spam.Example./x")
    commands = read_commands(inbox, set())
    assert commands.blocks == {"spam.example"} and commands.new_block
    assert commands_waiting(inbox)


def test_a_block_of_no_site_or_host_is_a_usage_error(tmp_path: Path) -> None:
    state = tmp_path / "state"
    for target in ("", "  ", "http://", "https://user@/x"):
        res = crawlkit("frontier", "block", "--state", str(state), target)
        assert res.code == 2, (target, res.stderr)
        assert res.stderr.splitlines() == [
            f"crawlkit frontier block: {target!r} names no site or host"
        ]
    assert not (state / "frontier" / "inbox").exists()  # nothing posted
    assert crawlkit("frontier", "unblock", "--state", str(state), "").code == 2


def test_unblocking_what_is_not_blocked_says_so(tmp_path: Path) -> None:
    """'unblock h1.test' where 'h1.test:8080' was blocked exited 0 and lifted nothing:
    the block stayed in force, and nothing told the operator."""
    state = tmp_path / "state"
    assert crawlkit("frontier", "block", "--state", str(state), "h1.test:8080").code == 0
    res = crawlkit("frontier", "unblock", "--state", str(state), "h1.test")
    assert res.code == 1
    assert res.stderr.splitlines() == [
        "crawlkit frontier unblock: h1.test is not blocked (blocks: h1.test:8080); nothing lifted"
    ]
    # a block posted and not yet applied is lifted; the second unblock has nothing to lift
    assert crawlkit("frontier", "unblock", "--state", str(state), "H1.test:8080").code == 0
    assert crawlkit("frontier", "unblock", "--state", str(state), "h1.test:8080").code == 1
