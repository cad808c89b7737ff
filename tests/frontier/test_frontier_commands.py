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
