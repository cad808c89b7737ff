"""crawlkit.fetch.hoststate: host clocks and payload digests survive a reopen."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from crawlkit.fetch.hoststate import HostRecord, HostState, KnownDigests


def test_host_state_round_trip(tmp_path: Path) -> None:
    s = HostState(tmp_path)
    s.put_host("a.test", HostRecord(100.0, 60.0, 160.0, 0.2, 1.0, 99.0))
    s.put_digest("sha1:X", "http://a.test/", "2026-01-01T00:00:00Z")
    s.commit()
    s.close()
    s = HostState(tmp_path)
    assert s.host("a.test") == HostRecord(100.0, 60.0, 160.0, 0.2, 1.0, 99.0)
    assert s.digest("sha1:X") == ("http://a.test/", "2026-01-01T00:00:00Z", None)
    assert s.host("b.test") is None
    s.close()


def _digest(i: int) -> str:
    return f"sha1:{i:032d}"


def test_digest_lookups_find_every_digest_known_before_and_after_the_filter(
    tmp_path: Path,
) -> None:
    """Revisit detection answers from an in-memory filter of the known digests once
    lookups have cost as much as reading the table; it must never forget a digest:
    committed by an earlier run, put before or after it was built, or after it filled
    up and was built again, larger."""
    s = HostState(tmp_path)
    for i in range(2000):
        s.put_digest(_digest(i), f"http://a.test/{i}", "2026-01-01T00:00:00Z")
    s.close()
    s = HostState(tmp_path)
    # the first lookups query the table; then the filter is built from it
    for i in range(2000, 3000):
        assert s.digest(_digest(i)) is None
        s.put_digest(_digest(i), f"http://b.test/{i}", "2026-01-02T00:00:00Z")
    assert s._known is not None
    first = s._known
    for i in range(3000, 40_000):  # past the first filter's capacity: a bigger one
        s.put_digest(_digest(i), f"http://c.test/{i}", "2026-01-03T00:00:00Z")
        if i % 5000 == 0:
            s.commit()
    assert s.digest(_digest(40_000)) is None
    assert s._known is not first and s._known.capacity > first.capacity
    s.commit()
    for i in range(0, 40_000, 7):
        host = "a" if i < 2000 else "b" if i < 3000 else "c"
        assert s.digest(_digest(i)) is not None, i
        assert s.digest(_digest(i))[0] == f"http://{host}.test/{i}"
    s.close()


def test_a_digest_being_committed_is_found(tmp_path: Path) -> None:
    """Between the moment a commit takes the pending digests and its COMMIT, the
    reader connection cannot see them yet; a lookup then still finds them."""
    s = HostState(tmp_path)
    s.put_digest("sha1:A", "http://a.test/", "2026-01-01T00:00:00Z")
    seen: list[object] = []

    class Db:
        def __init__(self, db: object) -> None:
            self.db = db

        def execute(self, sql: str, *args: object) -> object:
            if sql == "COMMIT":
                seen.append(s.digest("sha1:A"))
            return self.db.execute(sql, *args)  # type: ignore[attr-defined]

        def executemany(self, sql: str, rows: object) -> object:
            return self.db.executemany(sql, rows)  # type: ignore[attr-defined]

        def close(self) -> None:
            self.db.close()  # type: ignore[attr-defined]

    s._db = Db(s._db)  # type: ignore[assignment]
    s.commit()
    assert seen == [("http://a.test/", "2026-01-01T00:00:00Z", None)]
    assert s.digest("sha1:A") == ("http://a.test/", "2026-01-01T00:00:00Z", None)
    s.close()


def test_known_digests_filter_has_no_false_negatives_and_few_false_positives() -> None:
    known = KnownDigests(20_000)
    for i in range(20_000):
        known.add(_digest(i))
    assert all(_digest(i) in known for i in range(20_000))
    false = sum(_digest(i) in known for i in range(20_000, 60_000))
    assert false < 40_000 * 0.01  # about 0.25% at capacity
    assert not known.full() or known.count >= known.capacity


def test_a_digest_keeps_where_its_first_capture_is_and_older_states_open(
    tmp_path: Path,
) -> None:
    """A digest's first capture is found by where it is (a copy at another URL is parsed
    from it); a state of an older crawlkit, whose table has no such column, gets one
    and its rows say they do not know."""
    old = tmp_path / "old"
    old.mkdir()
    db = sqlite3.connect(old / "hosts.sqlite")
    db.executescript(
        "CREATE TABLE digests (digest TEXT PRIMARY KEY, uri TEXT NOT NULL, date TEXT NOT NULL);"
        "INSERT INTO digests VALUES ('sha1:OLD', 'http://a.test/', '2026-01-01T00:00:00Z');"
    )
    db.commit()
    db.close()
    s = HostState(old)
    assert s.digest("sha1:OLD") == ("http://a.test/", "2026-01-01T00:00:00Z", None)
    place = '{"file": "x.warc.gz", "offset": 10, "length": 99}'
    s.put_digest("sha1:NEW", "http://b.test/", "2026-01-02T00:00:00Z", place)
    s.close()
    s = HostState(old)
    assert s.digest("sha1:NEW") == ("http://b.test/", "2026-01-02T00:00:00Z", place)
    s.close()
