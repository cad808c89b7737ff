"""One page request from start to record: the request built (the run's headers, a
conditional GET's validators, the request settings), sent through the client under
the host's clock, bounded by the run's end, its response archived, and its fetch
record (and a redirect target's URL record) handed out.

:class:`PageFlow` is the page half of what :class:`crawlkit.fetch.engine.Fetcher`
runs for a host; :class:`crawlkit.fetch.robotsflow.RobotsFlow` is the robots.txt half.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

from crawlkit.fetch.archiver import WarcArchiver, provenance_fields
from crawlkit.fetch.config import DEADLINE_GRACE, FetchConfig
from crawlkit.fetch.exchange import FetchRequest, FetchResult, HttpClient
from crawlkit.fetch.hosts import Host, HostTable, Item
from crawlkit.fetch.outcome import (
    Outbox,
    Record,
    conditional,
    fetch_record,
    iso_time,
    redirect_target,
    shape_response,
    timing_fields,
)
from crawlkit.url import Canonicalizer

__all__ = ["PageFlow", "if_none_match"]

# The suffixes Apache httpd's content-coding filters add to a file's ETag (mod_deflate
# "-gzip", mod_brotli "-br") when they compress a response.
_CODING_SUFFIXES = ("-gzip", "-br")


class PageFlow:
    """Fetches a host's page URLs, one :meth:`fetch` at a time (the host's clock and
    the request slots are the engine's). ``in_flight`` holds the cut scopes of the
    requests running (the engine's set: its ``stop()`` moves them);
    ``on_proxy_failure`` is told of a request the proxy failed before the host goes
    back to the scheduler; :attr:`redirects_out` counts the redirect targets made."""

    def __init__(
        self,
        config: FetchConfig,
        *,
        client: HttpClient,
        headers: dict[str, str],
        hosts: HostTable,
        outbox: Outbox,
        archiver: WarcArchiver,
        canon: Canonicalizer,
        in_flight: set[asyncio.Timeout],
        clock: Callable[[], float],
        on_proxy_failure: Callable[[FetchResult], None],
        on_request: Callable[[], None] | None = None,
        on_redirect: Callable[[Record], None] | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.headers = headers
        self.hosts = hosts
        self.outbox = outbox
        self.archiver = archiver
        self.canon = canon
        self.in_flight = in_flight
        self.clock = clock
        self.on_proxy_failure = on_proxy_failure
        self.on_request = on_request
        self.on_redirect = on_redirect
        self.redirects_out = 0

    def request_headers(self, item: Item) -> dict[str, str]:
        """The run's headers, a conditional GET's validators from the input record,
        then the per-URL headers of the request settings."""
        rec = item.record
        headers = self.headers
        if conditional(rec):
            headers = dict(headers)
            if isinstance(rec.get("etag"), str) and rec["etag"]:
                headers["If-None-Match"] = if_none_match(rec["etag"])
            if isinstance(rec.get("last_modified"), str) and rec["last_modified"]:
                headers["If-Modified-Since"] = rec["last_modified"]
        if self.config.request:
            headers = {**headers, **self.config.request.for_url(item.url)}
        return headers

    async def fetch(self, host: Host, item: Item) -> None:
        """Fetch one page: request, the host's clock, the WARC, the fetch record (and
        a redirect target's URL record before it)."""
        rec = item.record
        cfg = self.config
        # The deadline can move earlier while the request runs (stop()), so the cap is
        # the time left at the start, and the cut is judged against the cap given.
        timeout = min(cfg.timeout, max(0.0, self.hosts.deadline + DEADLINE_GRACE - self.clock()))
        request = FetchRequest(
            item.url,
            host.address or "",
            self.request_headers(item),
            timeout,
            cfg.max_body,
            cfg.max_decoded,
            on_sent=functools.partial(self.hosts.sent, host),
        )
        started = self.clock()
        if self.on_request is not None:
            self.on_request()
        # A stop (stop()) gives the request DEADLINE_GRACE more through this scope.
        scope = asyncio.timeout(None)
        try:
            async with scope:
                self.in_flight.add(scope)
                try:
                    res: FetchResult = await self.client.fetch(request)
                finally:
                    self.in_flight.discard(scope)
        except TimeoutError:
            if not scope.expired():
                raise
            res = FetchResult(
                error="timeout: the run was stopped during the request",
                started=started,
                elapsed=self.clock() - started,
                address=host.address,
            )
        if cfg.request:
            cfg.request.note_response(item.url, res.headers)
        if res.proxy_failed:
            self.on_proxy_failure(res)  # before the host goes back: its URLs are deferred
        now = self.hosts.finish(host, res)
        # The host's clock is set: it may go back to the heap while the WARC is written.
        self.hosts.schedule(host, now)
        if res.proxy_failed:
            # the site was never asked (no fetched_at: no request to it to audit), it
            # made no error of its own; asked again next run
            self.outbox.emit(
                fetch_record(
                    rec,
                    item.url,
                    "deferred",
                    retry_at=iso_time(now),
                    error=res.error,
                    stopped=True,
                )
            )
            return
        if scope.expired() or (
            timeout < cfg.timeout and (res.truncated == "time" or _timed_out(res))
        ):
            # Cut by the run's end, not by the server: nothing is archived, and the next
            # run asks again.
            self.outbox.emit(
                fetch_record(
                    rec,
                    item.url,
                    "deferred",
                    retry_at=iso_time(now),
                    error="the run ended (--for or a stop) during the request",
                    stopped=True,
                    **timing_fields(res),
                )
            )
            return
        if res.status is None:
            self.outbox.emit(
                fetch_record(rec, item.url, "error", error=res.error, **timing_fields(res))
            )
            return
        extra = {"tlsUnverified": res.tls_unverified} if res.tls_unverified else {}
        extra.update(provenance_fields(rec))  # the hop path, in the capture's metadata
        not_modified_of = None
        if res.status == 304 and conditional(rec):
            known = rec.get("digest")
            not_modified_of = known if isinstance(known, str) else ""
        digest, loc = await self.archiver.archive(
            res, item.url, rec.get("depth"), extra, not_modified_of
        )
        outcome, fields = shape_response(
            rec, res, digest=digest, warc=loc, backoff_until=host.backoff_until
        )
        if outcome == "redirect":
            target = redirect_target(
                rec,
                item.url,
                res.location() or "",
                fields,
                max_hops=cfg.max_hops,
                canon=self.canon,
            )
            if target is not None:
                self.redirects_out += 1
                if self.on_redirect is not None:
                    self.on_redirect(target)
        self.outbox.emit(fetch_record(rec, item.url, outcome, **fields))


def _timed_out(res: FetchResult) -> bool:
    """Whether the request ended for want of time, before any response came."""
    error = res.error or ""
    return res.status is None and (error.startswith("timeout") or "handshake-timeout" in error)


def if_none_match(etag: str) -> str:
    """The If-None-Match value for a page last sent with ``etag``.

    Apache httpd with mod_deflate (or mod_brotli) sends a compressed page with its
    file's ETag plus "-gzip" (``"5c06d-66202c-gzip"``) but compares If-None-Match with
    the file's own ETag: its own validator never matches (Apache bug 45023, still so in
    2.4.71), so every recrawl of every gzipped page on such a site was a full 200,
    never a 304. For such an ETag the file's ETag is sent beside it (a list is valid
    If-None-Match, RFC 9110 13.1.2): Apache matches the second, any other server the
    first. The extra tag can only match at a server that gave it to the same URL."""
    tag = etag.strip()
    for suffix in _CODING_SUFFIXES:
        if tag.endswith(f'{suffix}"') and len(tag) > len(suffix) + 2:
            return f'{tag}, {tag[: -len(suffix) - 1]}"'
    return etag
