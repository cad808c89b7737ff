"""The waiting room as a frontier feature: a URL record due later, or a fetch log's
deferred record, waits out of ``frontier next`` until its time, then comes out once
(what ``crawl`` does with its deferred URLs, so the explained pipeline can too)."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import crawlkit

from crawlkit.frontier.waiting import WAITING, WaitingRoom, read_waiting

NOW = "2030-01-01T00:00:00Z"
LATER = "2030-01-01T01:00:00Z"
PAST_LATER = "2030-01-01T02:00:00Z"


def _next(state: Path, now: str) -> list[str]:
    res = crawlkit("frontier", "next", "--state", str(state), "--now", now, "--no-budgets")
    assert res.code == 0, res.stderr
    return [orjson.loads(line)["url"] for line in res.lines]


def _ndjson(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_a_url_due_later_waits_out_of_next_until_due(tmp_path: Path) -> None:
    state = tmp_path / "s"
    records = _ndjson(
        tmp_path / "in.ndjson",
        [
            {"url": "http://a.test/now", "reason": "link"},
            {"url": "http://a.test/later", "reason": "recrawl", "due": LATER},
        ],
    )
    res = crawlkit("frontier", "add", "--state", str(state), "--now", NOW, str(records))
    assert res.code == 0, res.stderr
    assert "1 waiting until due" in res.stderr
    assert _next(state, NOW) == ["http://a.test/now"]
    assert _next(state, NOW) == []  # still waiting: not lost, not handed out
    assert len(WaitingRoom(state / WAITING)) == 1
    assert _next(state, PAST_LATER) == ["http://a.test/later"]
    assert _next(state, PAST_LATER) == []  # once
    assert len(WaitingRoom(state / WAITING)) == 0


def test_deferred_records_of_a_fetch_log_wait_for_their_retry_time(tmp_path: Path) -> None:
    state = tmp_path / "s"
    log = _ndjson(
        tmp_path / "fetch.ndjson",
        [
            {"url": "http://b.test/ok", "outcome": "fetched", "status": 200},
            {
                "url": "http://b.test/busy",
                "host": "b.test",
                "site": "b.test",
                "reason": "link",
                "depth": 1,
                "outcome": "deferred",
                "status": 429,
                "retry_at": LATER,
                "error": "429: back off",
            },
        ],
    )
    res = crawlkit("frontier", "add", "--state", str(state), "--deferred", str(log))
    assert res.code == 0, res.stderr
    assert "1 deferred records, 1 now in the waiting room" in res.stderr
    # the room holds the URL record, as crawl's does: the attempt's fields are gone
    (waiting,) = read_waiting(state / WAITING)
    assert waiting["retry_at"] == LATER and "status" not in waiting and "error" not in waiting
    assert _next(state, NOW) == []  # the fetched URL is not queued again
    res = crawlkit("frontier", "next", "--state", str(state), "--now", PAST_LATER)
    (rec,) = [orjson.loads(line) for line in res.lines]
    assert rec["url"] == "http://b.test/busy" and rec["depth"] == 1
    assert "retry_at" not in rec and "outcome" not in rec
    assert _next(state, PAST_LATER) == []


def test_deferred_is_not_for_plain_urls(tmp_path: Path) -> None:
    res = crawlkit("frontier", "add", "--state", str(tmp_path / "s"), "--deferred", "--urls")
    assert res.code == 2 and "--deferred" in res.stderr
