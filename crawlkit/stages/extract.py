"""``crawlkit extract``: WARC responses to page records and link records.

Parsing burns CPU and runs apart from fetching. The main process reads the WARC
files in order, keeps the records worth parsing (``response``, HTTP 200, HTML by
Content-Type or by sniffing) and hands them in chunks to ``jobs`` worker processes;
results come back in submission order, so the output is the same bytes for any
``jobs`` (same input, same bytes out).

Per parsed page one page record (docs/design.md "Page record", plus ``status``,
``fetched_at``, ``host``, ``site``, ``fp``, ``depth``, ``content_type``,
``requisites``) and one link record per distinct outgoing http(s) link (a URL record
with ``depth`` + 1, ``reason: "link"``, ``via`` and ``from`` the page URL,
``nofollow`` and ``tag``). Page requisites (images, stylesheets, scripts, media, ...,
see :mod:`crawlkit.html.page`) are link records too, with ``reason: "requisite"`` and
``nofollow: false``. A stylesheet (``text/css``, HTTP 200) gives no page record, only
requisite records for its ``url()`` (``tag: "css"``) and ``@import`` (``tag:
"import"``) references. Sitemaps found in the WARC (with ``sitemaps``, the default):
a robots.txt response gives a record per ``Sitemap:`` line, and a sitemap or feed
(told by its content) the sitemap stage's URL records, both with ``reason:
"sitemap"`` (see :mod:`crawlkit.sitemap.discover`).

Counted and passed over, never fatal: revisit records other than stylesheets and copies
of pages, non-200 responses, non-HTML bodies and records whose target URI is not a
usable http(s) URL. A stylesheet stored as a ``revisit`` (the same bytes as one captured
at another URL) is parsed against its own URL, from the body of the capture it repeats
(see :func:`extract_warcs`); so is a page, when the caller says where the capture it
repeats is (``originals``: a crawl's cycle does, from the fetch records). Every page
gets its page record: a page over a parse-time cap (HTML bytes, links, nesting depth,
attributes a tag: see :mod:`crawlkit.html.guard`) is parsed up to the cap and written
with ``"capped": [...]``; a page whose parse raised, or whose worker died on it, is
recorded from a bounded scan of its bytes (its title and ``<a href>`` links, see
:mod:`crawlkit.html.fallback`) with ``"error": "..."``, or with ``"capped": ["time"]``
when it ran out of its CPU deadline (see :mod:`crawlkit.stages.extract_page`). Capped
pages and page errors are counted apart and reported on stderr with the URL. Pages are
always parsed in worker processes (``jobs`` of them, one at least, see
:mod:`crawlkit.stages.extract_pool`), so no page holds up the process that reads the
WARC. A truncated or damaged WARC ends that file with one line on stderr after the
records before the damage were processed; the next file is read."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InputError
from crawlkit.heap import release_free_heap
from crawlkit.html.page import (
    HTML_TYPES,
    HtmlExtractor,
    looks_like_html,
    media_type,
)
from crawlkit.sitemap.discover import (
    is_robots_txt,
    looks_like_sitemap,
)
from crawlkit.stages.extract_page import (
    ChunkResult,
    ExtractOptions,
    ExtractStats,
    Job,
    WarcSource,
    link_priority,
    process_chunk,
    worker_extractor,
)
from crawlkit.stages.extract_pool import (
    ChunkPool,
    ExtractStopped,
    executor,
    page_texts,
    wait_result,
)
from crawlkit.warc.read import WarcStats, current_name, iter_responses, iter_responses_at

__all__ = [
    "ExtractOptions",
    "ExtractStats",
    "ExtractStopped",
    "ExtractWorkers",
    "extract_warcs",
    "link_priority",
    "page_texts",
    "process_chunk",
]

# Types worth reading the body of: HTML, and the generic ones that get sniffed.
_CANDIDATE_TYPES = frozenset(
    {
        "",
        "text/html",
        "application/xhtml+xml",
        "text/plain",
        "application/octet-stream",
        "unknown/unknown",
        "application/unknown",
        "*/*",
    }
)


# Types a sitemap or feed comes with (besides the generic ones above).
_SITEMAP_TYPES = frozenset(
    {
        "application/xml",
        "text/xml",
        "application/x-gzip",
        "application/gzip",
        "application/rss+xml",
        "application/atom+xml",
        "application/rdf+xml",
    }
)


def _wanted(status: int | None, content_type: str | None) -> bool:
    mtype = media_type(content_type)
    return status == 200 and (
        mtype in _CANDIDATE_TYPES or mtype == "text/css" or mtype in _SITEMAP_TYPES
    )


def _kind(target: str, ctype: str | None, body: bytes, options: ExtractOptions) -> str | None:
    """What a 200 response is to extract: html, css, robots, sitemap, or None."""
    mtype = media_type(ctype)
    if mtype == "text/css":
        return "css" if options.requisites else None
    if options.sitemaps and is_robots_txt(target):
        return "robots"
    if mtype not in _SITEMAP_TYPES and looks_like_html(ctype, body):
        return "html"
    if options.sitemaps and looks_like_sitemap(body):
        return "sitemap"
    return None


# Stylesheet bodies kept by payload digest while one input is read, so a revisit of
# one (the same bytes at another URL) is parsed against its own URL.
CSS_CACHE_BYTES = 16 * 1024 * 1024

Originals = Mapping[str, tuple[str, int, int]]  # payload digest -> (WARC file, offset, length)


class _Stylesheets:
    """The bodies of the stylesheets an extract run has read, by payload digest (at
    most :data:`CSS_CACHE_BYTES`), and where to read the others (``originals``)."""

    def __init__(self, options: ExtractOptions, originals: Originals | None):
        self.options = options
        self.originals = originals or {}
        self.bodies: dict[str, bytes] = {}
        self.size = 0

    def keep(self, digest: str | None, body: bytes) -> None:
        if digest and digest not in self.bodies and self.size + len(body) <= CSS_CACHE_BYTES:
            self.bodies[digest] = body
            self.size += len(body)

    def body_of(self, digest: str | None) -> bytes | None:
        """The stylesheet with payload ``digest``: kept, or read from its original."""
        if not digest:
            return None
        body = self.bodies.get(digest)
        if body is not None or digest not in self.originals:
            return body
        path, offset, length = self.originals[digest]
        path = current_name(path)
        try:
            for resp in iter_responses_at(
                path, [(offset, length)], want_body=_wanted, max_body=self.options.max_body
            ):
                if resp.record_type == "response" and resp.body is not None:
                    self.keep(digest, resp.body)
                    return resp.body
        except (InputError, OSError):
            return None
        return None


def _revisit_css(resp: Any, options: ExtractOptions, sheets: _Stylesheets) -> bytes | None:
    """The body of a stylesheet stored as a revisit (identical payload), or None."""
    if not options.requisites or resp.status != 200:
        return None
    if media_type(resp.content_type) != "text/css":
        return None
    return sheets.body_of(resp.payload_digest)


def _revisit_html(resp: Any, sheets: _Stylesheets) -> bytes | None:
    """The body of a page stored as a revisit of a first capture at another URL, when
    the caller says where that one is (``originals``: a crawl's cycle does), or None.
    Its relative links resolve against its own URL: a site that serves the same pages
    as another (a mirror, sites built from one template) has its own pages behind
    them, which were never found when its copies were skipped."""
    if resp.status != 200 or resp.payload_digest not in sheets.originals:
        return None
    if media_type(resp.content_type) not in HTML_TYPES:
        return None
    return sheets.body_of(resp.payload_digest)


def _jobs(
    paths: Sequence[WarcSource],
    options: ExtractOptions,
    stats: ExtractStats,
    reporter: Reporter,
    originals: Originals | None = None,
) -> Iterator[Job]:
    sheets = _Stylesheets(options, originals)
    for path in paths:
        wstats = WarcStats()
        kw: dict[str, Any] = {"want_body": _wanted, "max_body": options.max_body, "stats": wstats}
        try:
            if isinstance(path, tuple):  # records at (offset, length) ranges of a file
                # (renamed between this look and the open, the file is unreadable here
                # and the crawl reads the cycle again: CycleRunner.extract)
                def damaged(exc: InputError) -> None:  # the next range is read
                    stats.damaged_files += 1
                    reporter.warn(str(exc), "damaged WARC")

                responses = iter_responses_at(
                    current_name(path[0]), path[1], on_damage=damaged, **kw
                )
            else:
                responses = iter_responses(path, **kw)
            for resp in responses:
                stats.records += 1
                if resp.record_type == "revisit":
                    stats.revisits += 1
                    # A stylesheet's url() and @import, and a page's links, resolve
                    # against its own URL: a copy of one at another URL (/fr/ beside
                    # /en/, a mirror) needs its own links (a page's copy only those).
                    css = _revisit_css(resp, options, sheets)
                    page = None if css is not None else _revisit_html(resp, sheets)
                    body = css if css is not None else page
                    if body is not None:
                        yield (
                            resp.target_uri,
                            resp.date,
                            resp.payload_digest,
                            200,
                            resp.content_type,
                            None if page is None else resp.headers.get("x-robots-tag"),
                            resp.depth,
                            body,
                            None,
                            "css" if page is None else "copy",
                        )
                    continue
                if resp.status is not None:
                    stats.by_status[resp.status] += 1
                if resp.status != 200:
                    stats.non_200 += 1
                    continue
                body = resp.body
                ctype = resp.content_type
                kind = _kind(resp.target_uri, ctype, body, options) if body is not None else None
                if kind is None or body is None:
                    stats.not_html += 1
                    continue
                if kind == "css":
                    sheets.keep(resp.payload_digest, body)
                if kind != "html":
                    yield (
                        resp.target_uri,
                        resp.date,
                        resp.payload_digest,
                        resp.status,
                        ctype,
                        None,
                        resp.depth,
                        body,
                        resp.truncated,
                        kind,
                    )
                    continue
                yield (
                    resp.target_uri,
                    resp.date,
                    resp.payload_digest,
                    resp.status,
                    ctype,
                    resp.headers.get("x-robots-tag"),
                    resp.depth,
                    body,
                    resp.truncated,
                    "html",
                )
        except InputError as exc:
            stats.damaged_files += 1
            reporter.warn(str(exc), "damaged WARC")
        stats.records += wstats.other


def _take(
    result: ChunkResult,
    stats: ExtractStats,
    write_pages: Callable[[bytes], object],
    write_links: Callable[[bytes], object] | None,
    reporter: Reporter,
) -> None:
    """Write one chunk's lines and add its counts and warnings to the run's."""
    pages, links, counts, warnings = result
    if pages:
        write_pages(pages)
    if links and write_links is not None:
        write_links(links)
    stats.pages += counts.get("pages", 0)
    stats.links += counts.get("links", 0)
    stats.requisites += counts.get("requisites", 0)
    stats.stylesheets += counts.get("stylesheets", 0)
    stats.sitemaps += counts.get("sitemaps", 0)
    stats.errors += counts.get("errors", 0)
    stats.capped += counts.get("capped", 0)
    stats.bad_url += counts.get("bad_url", 0)
    for message, kind in warnings:
        reporter.warn(message, kind)


def _chunks(jobs: Iterable[Job], options: ExtractOptions) -> Iterator[list[Job]]:
    chunk: list[Job] = []
    size = 0
    for job in jobs:
        chunk.append(job)
        size += len(job[7])
        if len(chunk) >= options.chunk_records or size >= options.chunk_bytes:
            yield chunk
            chunk = []
            size = 0
    if chunk:
        yield chunk


def extract_warcs(
    paths: Sequence[WarcSource],
    write_pages: Callable[[bytes], object],
    write_links: Callable[[bytes], object] | None = None,
    *,
    jobs: int = 1,
    options: ExtractOptions | None = None,
    reporter: Reporter | None = None,
    worker: Callable[[Sequence[Job]], ChunkResult] | None = None,
    extractor: HtmlExtractor | None = None,
    originals: Originals | None = None,
    fork: bool = True,
    stop: Callable[[], bool] | None = None,
) -> ExtractStats:
    """Extract every WARC in ``paths`` (in order) and write NDJSON lines.

    An item of ``paths`` is a WARC file, or ``(file, [(offset, length), ...])``: only
    the records at those ranges (``crawlkit crawl`` reads a cycle's records this way
    from files that hold many cycles, and may still be growing).

    ``write_pages`` / ``write_links`` receive whole chunks of NDJSON lines, in input
    order; ``write_links`` None drops link records. Pages are parsed in ``jobs`` worker
    processes (one at least; at most ``2 * jobs`` chunks in flight, so memory stays
    bounded), each page under the CPU deadline of ``options``; with ``extractor``
    given and ``jobs`` 1 they are parsed in this process (a worker of
    :class:`ExtractWorkers`, which runs under the deadline itself).
    Returns the counts; ``damaged_files`` > 0 means a WARC was cut off or corrupt
    (the command exits 1 then). ``worker`` replaces the function the worker processes
    run on a chunk (tests use it to make a worker die); ``fork`` False never forks the
    workers from this process (see :func:`crawlkit.stages.extract_pool.executor`).
    ``stop``, when given, is asked four times a second while a worker is waited for:
    once it says True the workers are ended and :class:`ExtractStopped` is raised (a
    crawl's hard stop).

    A stylesheet stored as a revisit (the same bytes as one captured at another URL)
    is parsed against its own URL: its body is the one read earlier in ``paths``, or
    the record ``originals`` names for its payload digest (``crawlkit crawl`` names
    the first capture of each stylesheet it has fetched); with neither it is counted
    as a revisit and passed over.
    """
    options = options or ExtractOptions()
    worker = worker or process_chunk
    reporter = reporter or NullReporter()
    stats = ExtractStats()
    chunks = _chunks(_jobs(paths, options, stats, reporter, originals), options)

    def take(result: ChunkResult) -> None:
        _take(result, stats, write_pages, write_links, reporter)

    if jobs <= 1 and extractor is not None:
        for chunk in chunks:
            take(process_chunk(chunk, extractor, options.requisites))
        return stats

    pool = ChunkPool(max(1, jobs), options, worker, fork, stop)
    try:
        pending: deque[tuple[list[Job], cf.Future[ChunkResult]]] = deque()
        for chunk in chunks:
            pending.append((chunk, pool.submit(chunk)))
            while len(pending) >= 2 * jobs:
                take(pool.result(pending, reporter))
        while pending:
            take(pool.result(pending, reporter))
    finally:
        pool.shutdown()
    return stats


FilesResult = tuple[bytes, bytes, ExtractStats, list[tuple[str, str]]]


class _KeepWarnings(Reporter):
    """Keeps a worker's warnings to hand back to the parent's reporter."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[tuple[str, str]] = []

    def warn(self, message: str, kind: str = "warning") -> None:
        self.kept.append((message, kind))


def extract_files(
    paths: Sequence[WarcSource], options: ExtractOptions, originals: Originals | None = None
) -> FilesResult:
    """Extract whole WARC files in a worker: ``(page lines, link lines, stats, warnings)``."""
    pages = bytearray()
    links = bytearray()
    keep = _KeepWarnings()
    stats = extract_warcs(
        paths,
        pages.extend,
        links.extend,
        options=options,
        reporter=keep,
        extractor=worker_extractor(),
        originals=originals,
    )
    result = bytes(pages), bytes(links), stats, keep.kept
    del pages, links
    release_free_heap()  # the files' bodies and parse trees, until the next files
    return result


class ExtractWorkers:
    """Extract processes kept for a whole run (``crawlkit crawl -j N``).

    Each :meth:`submit` hands whole WARC files to one worker, so parsing runs in
    another process beside the fetcher instead of under its interpreter lock, and
    ``jobs`` cycles can be parsed at once. Starting workers costs about a second, so
    they start on the first submit and stay until :meth:`close`.
    """

    def __init__(
        self,
        jobs: int,
        options: ExtractOptions | None = None,
        *,
        worker: Callable[..., FilesResult] | None = None,
    ):
        self.jobs = max(1, jobs)
        self.options = options or ExtractOptions()
        # what a worker runs on the files (tests pass one that dies)
        self.worker = worker or extract_files
        self._pool: cf.ProcessPoolExecutor | None = None

    def submit(
        self, paths: Sequence[WarcSource], originals: Originals | None = None
    ) -> cf.Future[FilesResult]:
        """Start extracting ``paths``; the future fails with BrokenProcessPool if a
        worker dies (then :meth:`extract` redoes the files page by page)."""
        if self._pool is None:
            self._pool = executor(self.jobs, self.options, fork=False)
        try:
            if originals:
                return self._pool.submit(self.worker, list(paths), self.options, dict(originals))
            return self._pool.submit(self.worker, list(paths), self.options)
        except cf.process.BrokenProcessPool as exc:
            failed: cf.Future[FilesResult] = cf.Future()
            failed.set_exception(exc)
            return failed

    def extract(
        self,
        paths: Sequence[WarcSource],
        write_pages: Callable[[bytes], object],
        write_links: Callable[[bytes], object] | None,
        *,
        reporter: Reporter,
        started: cf.Future[FilesResult] | None = None,
        originals: Originals | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> ExtractStats:
        """Extract ``paths`` (or take the result of ``started``, a :meth:`submit` of the
        same paths) and write the lines, as :func:`extract_warcs` would; ``stop`` as
        there (:class:`ExtractStopped` once it says True)."""
        future = started if started is not None else self.submit(paths, originals)
        try:
            pages, links, stats, warnings = wait_result(future, stop, self._pool)
        except ExtractStopped:
            self._pool = None
            raise
        except cf.process.BrokenProcessPool:
            # A page killed its worker (its CPU deadline, a crash in the C parser, the
            # OOM killer). Start afresh and redo these files with the per-page recovery
            # of extract_warcs.

            self.close()
            return extract_warcs(
                paths,
                write_pages,
                write_links,
                # a page a chunk, in one worker: the page it dies on is known at once
                options=dataclasses.replace(self.options, chunk_records=1),
                fork=False,
                stop=stop,
                reporter=reporter,
                originals=originals,
            )
        _take((pages, links, {}, warnings), stats, write_pages, write_links, reporter)
        return stats

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
