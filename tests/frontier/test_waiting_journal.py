"""The waiting room on disk: a save appends its changes to a journal instead of
rewriting the room, and the room read back is the room saved, through a folded
journal, a journal cut by a crash, or a crash between the fold and its deletion."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from crawlkit.errors import StateError
from crawlkit.frontier import waiting
from crawlkit.frontier.waiting import WaitingRoom, journal_of, read_waiting


def deferred(n: int, retry: float) -> dict:
    return {"url": f"http://a.test/{n}", "site": "a.test", "retry_at": retry, "status": 503}


def room_of(path: Path) -> list[tuple[str, float]]:
    return [(r["url"], r["retry_at"]) for r in read_waiting(path)]


def test_a_save_appends_its_changes_and_reading_back_gives_the_room(tmp_path: Path) -> None:
    path = tmp_path / "crawl" / "waiting.ndjson.zst"
    room = WaitingRoom(path)
    room.add(deferred(n, 1000.0 + n) for n in range(5000))
    room.save()  # 5,000 changes in an empty room: folded into the room file at once
    assert path.exists() and not journal_of(path).exists()
    room_bytes = path.stat().st_size

    room.add([deferred(7, 9000.0)])  # a later time replaces the URL's record
    room.add([deferred(8, 1.0)])  # an earlier one does not
    assert [r["url"] for r in room.due(1003.0)] == [f"http://a.test/{n}" for n in range(4)]
    assert room.take(["http://a.test/10", "http://a.test/nowhere"]) == 1
    room.save()
    # the room file is as it was; the journal holds the changes, not the room
    assert path.stat().st_size == room_bytes
    assert 0 < journal_of(path).stat().st_size < 2000
    expected = [(r["url"], r["retry_at"]) for r in room.records()]
    assert room_of(path) == expected
    assert len(expected) == 5000 - 4 - 1
    assert ("http://a.test/7", 9000.0) in expected and ("http://a.test/8", 1008.0) in expected


def test_the_journal_is_folded_once_it_is_as_long_as_the_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(waiting, "COMPACT_AFTER", 10)
    path = tmp_path / "waiting.ndjson.zst"
    room = WaitingRoom(path)
    for n in range(30):  # one change a save
        room.add([deferred(n, 100.0 + n)])
        room.save()
        lines = journal_of(path).read_bytes().count(b"\n") if journal_of(path).exists() else 0
        assert lines < max(10, n + 1)  # never longer than the room (or the floor)
    room.due(110.0)
    room.save()
    assert room_of(path) == [(f"http://a.test/{n}", 100.0 + n) for n in range(11, 30)]


def test_a_journal_line_cut_by_a_crash_is_dropped_and_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "waiting.ndjson.zst"
    room = WaitingRoom(path)
    room.add([deferred(1, 10.0)])
    room.save()
    room.add([deferred(2, 20.0)])
    room.save()
    journal = journal_of(path)
    whole = journal.read_bytes()
    journal.write_bytes(whole + b'{"put": {"url": "http://a.test/3", "ret')  # a cut append

    assert room_of(path) == [("http://a.test/1", 10.0), ("http://a.test/2", 20.0)]
    assert journal.read_bytes().endswith(b"ret")  # reading alone writes nothing

    again = WaitingRoom(path)
    again.add([deferred(4, 40.0)])  # a room that saves cuts the tail off first
    again.save()
    assert room_of(path) == [(f"http://a.test/{n}", n * 10.0) for n in (1, 2, 4)]
    assert journal.read_bytes().startswith(whole) and b"a.test/3" not in journal.read_bytes()


def test_a_damaged_line_before_others_is_an_error_not_a_silent_loss(tmp_path: Path) -> None:
    path = tmp_path / "waiting.ndjson.zst"
    room = WaitingRoom(path)
    for n in (1, 2):
        room.add([deferred(n, n * 10.0)])
        room.save()
    first, second = journal_of(path).read_bytes().splitlines(keepends=True)
    journal_of(path).write_bytes(first + b"not json\n" + second)
    with pytest.raises(StateError, match=r"waiting\.journal\.ndjson:2: not a waiting-room"):
        read_waiting(path)


def test_a_crash_between_the_fold_and_the_journals_deletion_changes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "waiting.ndjson.zst"
    room = WaitingRoom(path)
    room.add(deferred(n, 100.0 + n) for n in range(6))
    room.save()
    room.due(101.0)  # drops 0 and 1
    room.add([deferred(0, 500.0), deferred(3, 900.0)])  # 0 back later, 3 later still
    room.save()
    saved = room_of(path)
    kept = tmp_path / "journal.copy"
    shutil.copy(journal_of(path), kept)

    waiting.write_waiting(path, read_waiting(path))  # the fold ...
    shutil.copy(kept, journal_of(path))  # ... and a crash before the journal went
    assert room_of(path) == saved
    assert saved == [
        ("http://a.test/2", 102.0),
        ("http://a.test/4", 104.0),
        ("http://a.test/5", 105.0),
        ("http://a.test/0", 500.0),
        ("http://a.test/3", 900.0),
    ]
