"""A cycle's fetch log is parsed once for the cut and every post step (FetchLogs)."""

from __future__ import annotations

import io
from pathlib import Path

import orjson

from crawlkit import streams
from crawlkit.crawl import cycle as cycle_module
from crawlkit.crawl.cycle import CycleWarcs, FetchLogs
from crawlkit.diag import NullReporter, Reporter


def _log(cycle: Path, records: list[dict], tail: bytes = b"") -> None:
    cycle.mkdir(parents=True, exist_ok=True)
    data = b"".join(orjson.dumps(r) + b"\n" for r in records) + tail
    (cycle / "fetch.ndjson").write_bytes(data)


RECORDS = [
    {
        "url": f"http://a.test/{i}",
        "outcome": "fetched",
        "content_type": "text/css",
        "digest": f"sha1:{i % 3}",
        "warc": {"file": "x.warc.gz", "offset": i * 10, "length": 9},
    }
    for i in range(6)
] + [{"url": "http://a.test/d", "outcome": "deferred", "retry_at": "2026-12-02T00:00:00Z"}]


def test_the_log_is_parsed_once_for_every_reader(tmp_path: Path, monkeypatch) -> None:
    cycle = tmp_path / "crawl" / "cycles" / "000001"
    _log(cycle, RECORDS)
    (cycle / "robots.ndjson").touch()
    parses: list[object] = []
    real = streams.read_records_with_lines

    def counting(paths, *args, **kwargs):
        if paths and any(Path(p).name == "fetch.ndjson" for p in paths):
            parses.append(paths)
        return real(paths, *args, **kwargs)

    monkeypatch.setattr(streams, "read_records_with_lines", counting)
    warcs = CycleWarcs(tmp_path / "warc", tmp_path / "crawl", NullReporter())
    first = warcs.sources(cycle), warcs.originals(cycle)
    again = warcs.sources(cycle), warcs.originals(cycle)
    logs = warcs.fetch_logs
    assert logs.records(cycle) == RECORDS
    assert [(n, r) for _, n, r in logs.lines(cycle, NullReporter())] == list(enumerate(RECORDS, 1))
    assert first == again
    assert len(parses) == 1
    # what the old reader gave, record for record
    assert logs.records(cycle) == cycle_module.fetch_log(cycle)
    logs.forget(cycle)
    logs.records(cycle)
    assert len(parses) == 3  # the old reader's, and a parse after forget


def test_a_changed_log_is_read_again(tmp_path: Path) -> None:
    cycle = tmp_path / "000001"
    _log(cycle, RECORDS[:2])
    logs = FetchLogs()
    assert logs.records(cycle) == RECORDS[:2]
    _log(cycle, RECORDS[:3])  # (a recovery cuts an earlier run's log: its size changes)
    assert logs.records(cycle) == RECORDS[:3]
    assert FetchLogs().records(tmp_path / "none") == []


def test_a_bad_line_is_reported_to_the_reader_that_reports(tmp_path: Path) -> None:
    cycle = tmp_path / "000001"
    _log(cycle, RECORDS[:2], tail=b'{"url": "http://a.test/cut')
    logs = FetchLogs()
    assert logs.records(cycle) == RECORDS[:2]  # as read_file: skipped, not reported
    out = io.StringIO()
    rep = Reporter(stream=out)
    assert [r for _, _, r in logs.lines(cycle, rep)] == RECORDS[:2]
    assert rep.bad_records == 1
    assert "fetch.ndjson:3" in out.getvalue()
