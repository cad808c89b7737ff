"""The shard inbox reads only regular files (issue 15 item 9)."""

from __future__ import annotations

import io as pyio
import os
from pathlib import Path

import orjson
from conftest import crawlkit

from crawlkit import streams
from crawlkit.diag import Reporter
from crawlkit.shard.routing import inbox_files
from crawlkit.shard.slots import SlotMap


def _shard_one(tmp_path: Path) -> tuple[Path, list[str]]:
    """Shard 1 of two, made by a sharded frontier add; returns (state, --slot-map args)."""
    the_map = tmp_path / "map.json"
    assert crawlkit("shard", "--shards", "2", "--save-map", str(the_map)).code == 0
    state = tmp_path / "s1"
    args = ["--slot-map", str(the_map)]
    res = crawlkit("frontier", "add", "--state", str(state), "--shard", "1", *args, input=b"")
    assert res.code == 0, res.stderr
    return state, args


def _queued(state: Path) -> list[str]:
    res = crawlkit("frontier", "next", "--state", str(state), "--max", "1000")
    assert res.code == 0, res.stderr
    return [orjson.loads(line)["url"] for line in res.lines]


def test_a_symlink_in_the_inbox_is_not_followed(tmp_path: Path) -> None:
    state, _ = _shard_one(tmp_path)
    secret = tmp_path / "secret.ndjson.zst"
    with streams.open_output(secret) as out:  # records a symlink would smuggle in
        out.write_record({"url": "http://leak.example/secret", "reason": "seed"})
    inbox = state / "inbox"
    inbox.mkdir(exist_ok=True)
    (inbox / "evil.ndjson.zst").symlink_to(secret)
    (inbox / "passwd.ndjson.zst").symlink_to("/etc/passwd")
    res = crawlkit("frontier", "add", "--state", str(state), input=b"")
    assert res.code == 0, res.stderr
    assert "0 bad records skipped" in res.stderr  # /etc/passwd was not read as records
    assert "evil.ndjson.zst: not a regular file (a symlink)" in res.stderr
    assert "http://leak.example/secret" not in _queued(state)
    rejected = sorted(p.name for p in (state / "inbox-rejected").iterdir())
    assert rejected == ["evil.ndjson.zst", "passwd.ndjson.zst"]
    assert (state / "inbox-rejected" / "evil.ndjson.zst").is_symlink()
    assert secret.exists() and Path("/etc/passwd").exists()  # targets untouched


def test_a_directory_named_like_an_inbox_file_does_not_block(tmp_path: Path) -> None:
    state, _ = _shard_one(tmp_path)
    inbox = state / "inbox"
    (inbox / "x.ndjson.zst").mkdir(parents=True)
    with streams.open_output(inbox / "good.ndjson.zst") as out:
        out.write_record({"url": "http://s1.example/delivered", "reason": "link"})
    res = crawlkit("frontier", "add", "--state", str(state), input=b"")
    assert res.code == 0, res.stderr
    assert "x.ndjson.zst: not a regular file (a directory)" in res.stderr
    assert "1 new from the inbox" in res.stderr
    assert not (inbox / "x.ndjson.zst").exists()
    assert (state / "inbox-rejected" / "x.ndjson.zst").is_dir()
    res = crawlkit("frontier", "add", "--state", str(state), input=b"")  # and again
    assert res.code == 0, res.stderr


def test_inbox_files_lists_regular_files_and_sets_the_rest_aside(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.ndjson.zst").write_bytes(b"")
    (inbox / ".a.ndjson.zst.tmp").write_bytes(b"")
    os.mkfifo(inbox / "f.ndjson.zst")
    (tmp_path / "inbox-rejected").mkdir()
    (tmp_path / "inbox-rejected" / "f.ndjson.zst").write_bytes(b"")  # a name already taken
    buf = pyio.StringIO()
    rep = Reporter("crawlkit test", stream=buf)
    assert inbox_files(tmp_path, rep) == [inbox / "a.ndjson.zst"]
    assert "a FIFO" in buf.getvalue()
    assert len(list((tmp_path / "inbox-rejected").iterdir())) == 2


def test_deliver_does_not_carry_a_symlink_from_an_outbox(tmp_path: Path) -> None:
    the_map = tmp_path / "map.json"
    assert crawlkit("shard", "--shards", "2", "--save-map", str(the_map)).code == 0
    s0, s1 = tmp_path / "s0", tmp_path / "s1"
    for k, state in enumerate((s0, s1)):
        res = crawlkit(
            "frontier",
            "add",
            "--state",
            str(state),
            "--shard",
            str(k),
            "--slot-map",
            str(the_map),
            input=b"",
        )
        assert res.code == 0, res.stderr
    outbox = s0 / "outbox" / "shard-1"
    outbox.mkdir(parents=True)
    (outbox / "link.ndjson.zst").symlink_to("/etc/passwd")
    res = crawlkit("shard", "--deliver", str(s0), "--deliver", str(s1))
    assert res.code == 0, res.stderr
    assert "link.ndjson.zst: not a regular file (a symlink); not delivered" in res.stderr
    assert "0 outbox files delivered" in res.stderr
    assert not (s1 / "inbox").exists() or not list((s1 / "inbox").iterdir())
    assert (s0 / "outbox-rejected" / "link.ndjson.zst").is_symlink()


def test_delivered_urls_refused_by_scope_or_depth_are_not_marked_seen(tmp_path: Path) -> None:
    """Invariant 4 on the inbox path: a delivered URL outside --scope or past
    --max-depth is refused before the seen set, so a seed that widens the scope, or
    a shorter path, brings it back later."""
    state, args = _shard_one(tmp_path)
    slots = SlotMap.load(Path(args[1]))
    own = [f"http://s{i}.example/" for i in range(40)]
    own = [u for u in own if slots.shard_of_site(u.split("/")[2]) == 1]
    seed, far = own[:2]
    res = crawlkit(
        "frontier",
        "add",
        "--state",
        str(state),
        "--scope",
        "host",
        "--urls",
        "--reason",
        "seed",
        "-",
        input=f"{seed}\n".encode(),
    )
    assert res.code == 0, res.stderr
    assert crawlkit("seen-merge", "--state", str(state), input=b"").code == 0  # a seen set
    inbox = state / "inbox"
    inbox.mkdir(exist_ok=True)
    with streams.open_output(inbox / "from-0.ndjson.zst") as out:
        out.write_record({"url": far + "page", "reason": "link", "depth": 1})
        out.write_record({"url": seed + "deep", "reason": "link", "depth": 25})
        out.write_record({"url": seed + "near", "reason": "link", "depth": 1})
    res = crawlkit("frontier", "add", "--state", str(state), "--scope", "host", input=b"")
    assert res.code == 0, res.stderr
    urls = (far + "page", seed + "deep", seed + "near")
    seen = crawlkit("seen-merge", "--state", str(state), "--contains", *urls)
    assert [orjson.loads(line)["seen"] for line in seen.lines] == [False, False, True]
    assert seed + "near" in _queued(state)
