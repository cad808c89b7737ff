"""crawlkit.fetch.hoststate: host clocks and payload digests survive a reopen."""

from __future__ import annotations

from pathlib import Path

from crawlkit.fetch.hoststate import HostRecord, HostState


def test_host_state_round_trip(tmp_path: Path) -> None:
    s = HostState(tmp_path)
    s.put_host("a.test", HostRecord(100.0, 60.0, 160.0, 0.2, 1.0, 99.0))
    s.put_digest("sha1:X", "http://a.test/", "2026-01-01T00:00:00Z")
    s.commit()
    s.close()
    s = HostState(tmp_path)
    assert s.host("a.test") == HostRecord(100.0, 60.0, 160.0, 0.2, 1.0, 99.0)
    assert s.digest("sha1:X") == ("http://a.test/", "2026-01-01T00:00:00Z")
    assert s.host("b.test") is None
    s.close()
