"""The WARC archiver's promise to the fetch log: a location it returns is on disk.

A fetch record is logged (and flushed) with the WARC location the archiver returned,
and the crawl deletes a batch file once every URL of it has a fetch record. So the
record's bytes must be with the OS by then: a kill -9 loses Python's buffers, a
recovery cuts the WARC file back to its last whole record and drops the fetch records
pointing past the cut, and a URL whose batch file is gone would be fetched by no one.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from crawlkit.fetch.archiver import WarcArchiver
from crawlkit.fetch.client import FetchResult
from crawlkit.warc.write import WarcWriter


def test_a_returned_location_is_on_disk_before_the_file_is_flushed(tmp_path: Path) -> None:
    async def archive_small_pages() -> list[dict]:
        archiver = WarcArchiver(WarcWriter(tmp_path, prefix="t"), None, max_pending=8)
        try:
            locations = []
            for n in range(3):  # a few hundred bytes each: well inside a write buffer
                res = FetchResult(
                    status=200,
                    response_head=b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n",
                    request_head=b"GET /%d HTTP/1.1\r\nHost: a.test\r\n\r\n" % n,
                    body=b"page %d" % n,
                    started=time.time(),
                    address="127.0.0.1",
                )
                _digest, location = await archiver.archive(res, f"http://a.test/{n}", 0, {})
                locations.append(location)
                # What a SIGKILL now would leave: the bytes the OS has, nothing buffered.
                (open_file,) = tmp_path.glob("*.warc.gz.open")
                assert open_file.stat().st_size >= location["offset"] + location["length"]
            return locations
        finally:
            await archiver.close()
            archiver.shutdown()

    locations = asyncio.run(archive_small_pages())
    assert [loc["length"] < 2000 for loc in locations] == [True, True, True]
