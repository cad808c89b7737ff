"""The WARC archiver: hands each exchange to the WARC thread and returns where it went.

:class:`WarcArchiver` is the one place a fetch run writes to the WARC. For each
response (a page or a robots.txt) it hashes the payload, asks the host state whether an
identical 2xx payload was archived before (then the capture is a ``revisit``), builds the
:class:`~crawlkit.warc.write.Capture` with its metadata (fetch time, address, and what
the caller adds: ``robots``, ``tlsUnverified``) and has the
:class:`~crawlkit.warc.write.WarcWriter` write it. File format, naming and rotation by
size are the writer's; this module decides on which thread it runs and when.

Why a thread of its own: hashing, the revisit lookup and compression cost more than the
request did, and zlib and hashlib release the GIL. Captures are queued and written in
batches, one event-loop wake-up per batch, because a hand-over per capture costs the
loop more than the capture. ``pending`` counts captures not yet written; the engine
starts no request while it is at ``max_pending``, so a slow disk holds memory to about
that many bodies.
"""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from crawlkit.fetch.exchange import FetchResult
from crawlkit.fetch.hoststate import HostState
from crawlkit.warc.write import Capture, WarcWriter, sha1_digest, warc_date

__all__ = ["WarcArchiver", "provenance_fields"]

_Job = tuple[asyncio.Future[tuple[str, Any]], tuple[Any, ...]]


def provenance_fields(rec: dict[str, Any]) -> dict[str, str]:
    """How a URL record was reached, for its capture's metadata record (as Heritrix
    writes ``via`` and ``hopsFromSeed``): ``via`` (the page or redirect that led
    here), ``reason`` (seed, link, requisite, redirect, sitemap, recrawl) and
    ``hopsFromSeed`` (the depth). Values are single lines; absent fields are left out."""
    out: dict[str, str] = {}
    for key, name in (("via", "via"), ("reason", "reason"), ("depth", "hopsFromSeed")):
        value = rec.get(key)
        if value is not None and value != "":
            out[name] = " ".join(str(value).split())
    return out


class WarcArchiver:
    """Writes exchanges to ``warc`` (None: nothing is archived, digests are still
    computed) on one worker thread; ``state`` (optional) remembers payload digests
    across runs for revisit records."""

    def __init__(
        self, warc: WarcWriter | None, state: HostState | None, *, max_pending: int
    ) -> None:
        self.warc = warc
        self.state = state
        self.pending = 0
        self.max_pending = max_pending
        self._lock = threading.Lock()
        self._queue: list[_Job] = []
        self._draining = False
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="warc")

    @property
    def full(self) -> bool:
        """Whether as many captures wait as may: start no request until one is written."""
        return self.pending >= self.max_pending

    async def archive(
        self,
        res: FetchResult,
        url: str,
        depth: Any,
        extra: dict[str, str],
        not_modified_of: str | None = None,
    ) -> tuple[str, Any]:
        """Write the exchange to the WARC; returns (payload digest, location dict or None).

        ``not_modified_of`` is given for a 304 to a conditional GET: the digest the page
        had (the input record's, "" when unknown). The capture is then a revisit of the
        server-not-modified profile, of the earlier capture with that digest when the
        state knows it, and its digest is that one: a replay of the page shows the
        content it still has, not the 304's empty body.

        Hashing, the revisit lookup and compression run on the WARC thread, in order,
        so the event loop only hands the response over. Without a writer, or without a
        response, nothing is written and the location is None.
        """
        if self.warc is None or res.status is None:
            return not_modified_of or sha1_digest(res.body), None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[str, Any]] = loop.create_future()
        with self._lock:
            self._queue.append((future, (res, url, depth, extra, not_modified_of)))
            start, self._draining = not self._draining, True
        if start:
            loop.run_in_executor(self._pool, self._drain, loop)
        self.pending += 1
        try:
            return await future
        finally:
            self.pending -= 1

    def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        """WARC thread: write queued captures in batches, one loop wake-up per batch
        (a hand-over per capture costs the event loop more than the capture)."""
        while True:
            with self._lock:
                batch, self._queue = self._queue, []
                if not batch:
                    self._draining = False
                    return
            results: list[tuple[bool, Any]] = []
            for _, args in batch:
                try:
                    results.append((True, self._write(*args)))
                except Exception as exc:  # handed to the awaiting task
                    results.append((False, exc))
            # A location is logged the moment it is delivered, and a batch file is
            # deleted on the log's word: its bytes must be with the OS by then, or a
            # kill -9 loses them with the buffer and a recovery drops the record.
            try:
                if self.warc is not None:
                    self.warc.flush()
            except Exception as exc:
                results = [(False, exc)] * len(batch)
            loop.call_soon_threadsafe(_deliver, [f for f, _ in batch], results)

    def _write(
        self,
        res: FetchResult,
        url: str,
        depth: Any,
        extra: dict[str, str],
        not_modified_of: str | None = None,
    ) -> tuple[str, Any]:
        """WARC thread: one capture, a revisit when a 2xx payload was seen before (or
        when the server said the page was not modified)."""
        assert self.warc is not None and res.status is not None
        date = warc_date(res.started, self.warc.version)
        not_modified = not_modified_of is not None
        digest = not_modified_of or sha1_digest(res.body)
        whole = not res.truncated and 200 <= res.status < 300 and not not_modified
        # a 2xx payload whole: stored once, its copies as revisits of the first capture
        state = self.state if whole and res.body else None
        first = state.digest(digest) if state is not None else None
        if not_modified and not_modified_of and self.state is not None:
            # the capture it is the same as: an empty one only by its own URL
            first = self.state.digest(not_modified_of) or self.state.digest(
                _at_url(not_modified_of, url)
            )
        meta = {
            "fetchTimeMs": str(int(res.elapsed * 1000)),
            "ipAddress": res.address or "",
            **extra,
        }
        if res.truncated:
            meta["truncated"] = res.truncated
        encoded = (res.header("Content-Encoding") or "identity").strip().lower() != "identity"
        place = json.loads(first[2]) if first is not None and first[2] is not None else {}
        first_id = place.pop("id", None)  # its WARC-Record-ID (digests kept since it is)
        cap = Capture(
            url=url,
            ip=res.address,
            date=res.started,
            request_head=res.request_head,
            response_head=res.response_head,
            body=res.body,
            payload_digest=digest,
            truncated=res.truncated,
            depth=depth if isinstance(depth, int) else None,
            revisit_of=first[:2] if first is not None else None,
            revisit_of_id=first_id if isinstance(first_id, str) else None,
            not_modified=not_modified,
            metadata=meta,
            precompressed=encoded,
        )
        location = self.warc.write_capture(cap)
        where = location.to_dict()
        # the place kept for later revisits names the record too (WARC-Refers-To)
        kept = json.dumps({**where, "id": location.record_id})
        if state is not None and first is None:
            state.put_digest(digest, url, date, kept)
        elif whole and not res.body and self.state is not None:
            self.state.put_digest(_at_url(digest, url), url, date, kept)
        elif place and first is not None and first[0] != url and not not_modified:
            # A copy at another URL: its links resolve against its own URL, so extract
            # parses it from the first capture (crawl/cycle.py: CycleWarcs.originals).
            where["refers_to"] = {**place, "url": first[0]}
        return digest, where

    async def close(self) -> None:
        """Close the WARC file (renamed to its final name) after what was queued."""
        if self.warc is not None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._pool, self.warc.close)

    def shutdown(self) -> None:
        """Stop the WARC thread (after :meth:`close`)."""
        self._pool.shutdown()


def _at_url(digest: str, url: str) -> str:
    """The host state's key for the capture of payload ``digest`` at ``url`` alone (a
    digest has no space). An empty body is no payload to share between URLs (every
    empty page would be a revisit of the first), so it is not kept by its digest; a
    304 to the recrawl of an empty page still has its capture to refer to (without it,
    its revisit had no WARC-Refers-To-Target-URI or -Date)."""
    return f"{digest} {url}"


def _deliver(futures: list[asyncio.Future[Any]], results: list[tuple[bool, Any]]) -> None:
    """Event loop: settle the futures of one written batch (a cancelled one is skipped)."""
    for future, (ok, value) in zip(futures, results, strict=True):
        if future.cancelled():
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)
