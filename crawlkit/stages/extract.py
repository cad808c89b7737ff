"""``crawlkit extract``: WARC responses to page records and link records.

Parsing burns CPU and runs apart from fetching. The main process reads the WARC
files in order, keeps the records worth parsing (``response``, HTTP 200, HTML by
Content-Type or by sniffing) and hands them in chunks to ``jobs`` worker processes;
results come back in submission order, so the output is the same bytes for any
``jobs`` (same input, same bytes out).

Per parsed page one page record (DESIGN.md "Page record", plus ``status``,
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

Counted and passed over, never fatal: revisit records, non-200 responses, non-HTML
bodies, records whose target URI is not a usable http(s) URL, and pages that fail to
parse (reported on stderr with the URL). A page over a parse-time cap (HTML bytes,
links, nesting depth, attributes a tag: see :mod:`crawlkit.html.guard`) is parsed up to
the cap, written with ``"capped": [...]`` and counted as an error. A truncated or
damaged WARC ends that file with one line on stderr after the records before the damage
were processed; the next file is read.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import signal
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InputError, InvalidURL
from crawlkit.html.css import css_refs, decode_css
from crawlkit.html.page import (
    MAX_HTML_BYTES,
    MAX_LINKS,
    HtmlExtractor,
    Link,
    looks_like_html,
    media_type,
)
from crawlkit.records import link_fields, page_record
from crawlkit.sitemap.discover import (
    is_robots_txt,
    looks_like_sitemap,
    robots_records,
    sitemap_records,
)
from crawlkit.url import Canonicalizer, Rules
from crawlkit.warc.read import MAX_BODY, WarcStats, iter_responses, iter_responses_at

__all__ = ["ExtractOptions", "ExtractStats", "ExtractWorkers", "extract_warcs", "link_priority"]

_NL = orjson.OPT_APPEND_NEWLINE
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


@dataclass(frozen=True, slots=True)
class ExtractOptions:
    """Tuning for one run; every field has the documented default."""

    rules: Rules = Rules.DEFAULT
    max_html_bytes: int = MAX_HTML_BYTES
    max_links: int = MAX_LINKS
    max_body: int = MAX_BODY
    chunk_records: int = 64
    chunk_bytes: int = 4 * 1024 * 1024
    requisites: bool = True  # write requisite link records (pages' and stylesheets')
    sitemaps: bool = True  # write records for robots.txt Sitemap lines and sitemaps


@dataclass(slots=True)
class ExtractStats:
    """Counts for the summary line. ``errors`` counts parse failures and capped pages."""

    records: int = 0
    pages: int = 0
    links: int = 0
    requisites: int = 0
    stylesheets: int = 0
    sitemaps: int = 0  # robots.txt files and sitemaps read
    revisits: int = 0
    non_200: int = 0
    not_html: int = 0
    bad_url: int = 0
    errors: int = 0
    capped: int = 0
    damaged_files: int = 0
    by_status: Counter[int] = field(default_factory=Counter)

    def summary(self) -> str:
        return (
            f"{self.records} WARC records: {self.pages} pages, {self.links} links, "
            f"{self.requisites} requisites ({self.stylesheets} stylesheets read), "
            f"{self.sitemaps} sitemaps and robots.txt read; "
            f"passed over {self.revisits} revisits, {self.non_200} non-200, "
            f"{self.not_html} not HTML, {self.bad_url} unusable URLs; "
            f"{self.errors} page errors ({self.capped} over a cap)"
            + (
                f"; {self.damaged_files} WARC files unreadable or damaged"
                if self.damaged_files
                else ""
            )
        )


def link_priority(depth: int, nofollow: bool) -> float:
    """A link's priority hint for the frontier: 1/(depth+1), halved for nofollow.

    Higher is sooner; the frontier is free to weigh it with what it knows.
    """
    value = 1.0 / (depth + 1)
    return round(value / 2 if nofollow else value, 6)


# A job is the part of a WARC response a worker needs, as plain picklable values.
Job = tuple[str, str | None, str | None, int, str | None, str | None, int, bytes, str | None, str]
# (target_uri, fetched_at, digest, status, content_type, x_robots_tag, depth, body,
#  truncated, kind: "html", "css", "robots" or "sitemap")
ChunkResult = tuple[bytes, bytes, dict[str, int], list[tuple[str, str]]]
# A whole WARC file, or (file, [(offset, length), ...]): the records a fetch log names.
WarcSource = str | tuple[str, Sequence[tuple[int, int]]]

_worker: HtmlExtractor | None = None
_TAGS = {
    t: t.encode()
    for t in (
        "a",
        "area",
        "link",
        "frame",
        "iframe",
        "meta",
        "img",
        "source",
        "script",
        "video",
        "audio",
        "track",
        "object",
        "embed",
        "input",
        "image",
        "style",
        "background",
        "css",
        "import",
    )
}


def _init_worker(options: ExtractOptions) -> None:
    global _worker, _want_requisites
    # Ctrl-C reaches the whole process group. The parent decides what an interrupt
    # means (crawl and fetch stop gracefully on the first one) and shuts the workers
    # down; a worker dying of it mid-page would turn that into a failed run.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker = HtmlExtractor(
        Canonicalizer(options.rules),
        max_html_bytes=options.max_html_bytes,
        max_links=options.max_links,
    )
    _want_requisites = options.requisites


_want_requisites = True


def _link_lines(
    links: Iterable[Link], source: str, depth: int, reason: str, out: list[bytes]
) -> None:
    """Append the link records of ``links`` found at ``source`` (of ``depth``) to ``out``.

    Link records share everything after "fp" with each other: that part is serialized
    once (two variants, followable and nofollow) and spliced in.
    """
    link_depth = depth + 1
    tails = [
        orjson.dumps(
            link_fields(
                depth=link_depth,
                priority=link_priority(link_depth, nf),
                reason=reason,
                source=source,
                nofollow=nf,
            )
        )[1:-1]
        for nf in (False, True)
    ]
    for link in links:
        target_url = link.url
        head = orjson.dumps(
            {
                "url": target_url.url,
                "host": target_url.host,
                "site": target_url.site,
                "fp": target_url.fp,
            }
        )
        out.append(
            b"".join((head[:-1], b",", tails[link.nofollow], b',"tag":"', _TAGS[link.tag], b'"}\n'))
        )


def _stylesheet(job: Job, ex: HtmlExtractor, links: list[bytes], counts: Counter[str]) -> None:
    """The requisite records of one stylesheet's ``url()`` and ``@import`` references."""
    target, _fa, _dg, _st, ctype, _xr, depth, body, _tr, _css = job
    try:
        source = ex.canon.parse(target).url
    except InvalidURL:
        counts["bad_url"] += 1
        return
    found: list[Link] = []
    seen: set[str] = set()
    for ref in css_refs(decode_css(body, ctype), max_urls=ex.max_links):
        parsed = ex.resolve(ref.url, target)
        if parsed is None or parsed.fp in seen:
            continue
        seen.add(parsed.fp)
        found.append(Link(parsed, False, "import" if ref.kind == "import" else "css"))
    _link_lines(found, source, depth, "requisite", links)
    counts["stylesheets"] += 1
    counts["requisites"] += len(found)


def _discovered(
    job: Job,
    ex: HtmlExtractor,
    links: list[bytes],
    counts: Counter[str],
    warnings: list[tuple[str, str]],
) -> None:
    """The records of a robots.txt's Sitemap lines, or of a sitemap document."""
    target, kind, body = job[0], job[9], job[7]

    def warn(message: str) -> None:
        warnings.append((message, "sitemap"))

    if kind == "robots":
        records = robots_records(body, target, ex.canon, warn)
    else:
        records = sitemap_records(body, target, warn)
    links.extend(orjson.dumps(rec, option=_NL) for rec in records)
    counts["sitemaps"] += 1
    counts["links"] += len(records)


def process_chunk(
    jobs: Sequence[Job], extractor: HtmlExtractor | None = None, want_requisites: bool = True
) -> ChunkResult:
    """Parse a chunk of responses: ``(page lines, link lines, counts, warnings)``.

    Never raises for one page: a failure becomes a warning and a count. ``extractor``
    and ``want_requisites`` are for the calling process; a worker process uses the
    parser and setting its initializer made.
    """
    keep_requisites = _want_requisites if extractor is None else want_requisites
    ex = extractor if extractor is not None else _worker
    assert ex is not None, "worker not initialised"
    pages: list[bytes] = []
    links: list[bytes] = []
    counts: Counter[str] = Counter()
    warnings: list[tuple[str, str]] = []
    for job in jobs:
        target, fetched_at, digest, status, ctype, x_robots, depth, body, truncated, kind = job
        if kind == "css":
            if keep_requisites:
                _stylesheet(job, ex, links, counts)
            continue
        if kind in ("robots", "sitemap"):
            _discovered(job, ex, links, counts, warnings)
            continue
        try:
            page_url = ex.canon.parse(target)
        except InvalidURL as exc:
            counts["bad_url"] += 1
            warnings.append((f"{target[:200]}: {exc}", "unusable URL"))
            continue
        try:
            page = ex.extract(body, target, content_type=ctype, x_robots_tag=x_robots)
        except Exception as exc:  # one page never ends the run
            counts["errors"] += 1
            warnings.append(
                (f"{page_url.url}: cannot parse ({type(exc).__name__}: {exc})", "page error")
            )
            continue
        record = page_record(
            page_url,
            depth=depth,
            status=status,
            fetched_at=fetched_at,
            content_type=ctype,
            charset=page.charset,
            digest=digest,
            simhash=page.simhash,
            title=page.title,
            canonical=page.canonical,
            noindex=page.noindex,
            nofollow=page.nofollow,
            links=len(page.links),
            requisites=len(page.requisites),
            text_bytes=page.text_bytes,
        )
        if truncated:
            record["truncated"] = truncated
        if page.capped:
            record["capped"] = page.capped
            counts["errors"] += 1
            counts["capped"] += 1
            warnings.append(
                (
                    f"{page_url.url}: over the {' and '.join(page.capped)} cap; parsed up to it",
                    "page error",
                )
            )
        pages.append(orjson.dumps(record, option=_NL))
        counts["pages"] += 1
        _link_lines(page.links, page_url.url, depth, "link", links)
        if keep_requisites:
            _link_lines(page.requisites, page_url.url, depth, "requisite", links)
            counts["requisites"] += len(page.requisites)
        counts["links"] += len(page.links)
    return b"".join(pages), b"".join(links), dict(counts), warnings


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


def _jobs(
    paths: Sequence[WarcSource],
    options: ExtractOptions,
    stats: ExtractStats,
    reporter: Reporter,
) -> Iterator[Job]:
    for path in paths:
        wstats = WarcStats()
        kw: dict[str, Any] = {"want_body": _wanted, "max_body": options.max_body, "stats": wstats}
        try:
            if isinstance(path, tuple):  # records at (offset, length) ranges of a file
                responses = iter_responses_at(path[0], path[1], **kw)
            else:
                responses = iter_responses(path, **kw)
            for resp in responses:
                stats.records += 1
                if resp.record_type == "revisit":
                    stats.revisits += 1
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
) -> ExtractStats:
    """Extract every WARC in ``paths`` (in order) and write NDJSON lines.

    An item of ``paths`` is a WARC file, or ``(file, [(offset, length), ...])``: only
    the records at those ranges (``crawlkit crawl`` reads a cycle's records this way
    from files that hold many cycles, and may still be growing).

    ``write_pages`` / ``write_links`` receive whole chunks of NDJSON lines, in input
    order; ``write_links`` None drops link records. ``jobs`` > 1 parses in that many
    worker processes (at most ``2 * jobs`` chunks in flight, so memory stays bounded).
    Returns the counts; ``damaged_files`` > 0 means a WARC was cut off or corrupt
    (the command exits 1 then). ``worker`` replaces the function the worker processes
    run on a chunk (tests use it to make a worker die); ``extractor`` is the parser
    ``jobs`` 1 uses (one is made when None).
    """
    options = options or ExtractOptions()
    worker = worker or process_chunk
    reporter = reporter or NullReporter()
    stats = ExtractStats()
    chunks = _chunks(_jobs(paths, options, stats, reporter), options)

    def take(result: ChunkResult) -> None:
        _take(result, stats, write_pages, write_links, reporter)

    if jobs <= 1:
        extractor = extractor or HtmlExtractor(
            Canonicalizer(options.rules),
            max_html_bytes=options.max_html_bytes,
            max_links=options.max_links,
        )
        for chunk in chunks:
            take(process_chunk(chunk, extractor, options.requisites))
        return stats

    pool = _Pool(jobs, options, worker)
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


class _Pool:
    """Worker processes that survive a worker's death.

    If a worker dies (a crash in the C parser on one page, the OOM killer), every
    chunk in flight fails with BrokenProcessPool. The pool is then rebuilt, the chunk
    at the head is redone one page at a time so the page that kills a worker is found,
    counted as an error and passed over, and the chunks behind it are resubmitted; the
    output order does not change.
    """

    def __init__(
        self, jobs: int, options: ExtractOptions, worker: Callable[[Sequence[Job]], ChunkResult]
    ):
        self.jobs = jobs
        self.options = options
        self.worker = worker
        self.executor = self._new()

    def _new(self) -> cf.ProcessPoolExecutor:
        return _executor(self.jobs, self.options)

    def submit(self, chunk: list[Job]) -> cf.Future[ChunkResult]:
        try:
            return self.executor.submit(self.worker, chunk)
        except cf.process.BrokenProcessPool as exc:
            # A worker died after the last result was read; the chunk is redone when
            # its turn comes (see result()).
            failed: cf.Future[ChunkResult] = cf.Future()
            failed.set_exception(exc)
            return failed

    def _restart(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.executor = self._new()

    def result(
        self, pending: deque[tuple[list[Job], cf.Future[ChunkResult]]], reporter: Reporter
    ) -> ChunkResult:
        """The result of the head chunk (popped), recovering from a dead worker."""
        chunk, future = pending[0]
        try:
            result = future.result()
        except cf.process.BrokenProcessPool:
            self._restart()
            result = self._one_by_one(chunk)
            for i in range(1, len(pending)):
                pending[i] = (pending[i][0], self.submit(pending[i][0]))
        pending.popleft()
        return result

    def _one_by_one(self, chunk: list[Job]) -> ChunkResult:
        pages: list[bytes] = []
        links: list[bytes] = []
        counts: Counter[str] = Counter()
        warnings: list[tuple[str, str]] = []
        for job in chunk:
            try:
                p, lk, c, w = self.submit([job]).result()
            except cf.process.BrokenProcessPool:
                self._restart()
                counts["errors"] += 1
                warnings.append(
                    (
                        f"{job[0][:200]}: the parser process died on this page; passed over",
                        "page error",
                    )
                )
                continue
            pages.append(p)
            links.append(lk)
            counts.update(c)
            warnings.extend(w)
        return b"".join(pages), b"".join(links), dict(counts), warnings

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


def _executor(jobs: int, options: ExtractOptions) -> cf.ProcessPoolExecutor:
    """Worker processes with a parser each.

    Forking is the cheapest start, but only safe while this process has one thread: a
    fork copies locks that other threads hold (``crawlkit crawl`` runs extract beside
    its fetch threads), so a threaded process starts workers from a fork server.
    """
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        method = "fork"
    elif "forkserver" in methods:
        method = "forkserver"
    else:
        method = "spawn"
    return cf.ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context(method),
        initializer=_init_worker,
        initargs=(options,),
    )


FilesResult = tuple[bytes, bytes, ExtractStats, list[tuple[str, str]]]


class _KeepWarnings(Reporter):
    """Keeps a worker's warnings to hand back to the parent's reporter."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[tuple[str, str]] = []

    def warn(self, message: str, kind: str = "warning") -> None:
        self.kept.append((message, kind))


def extract_files(paths: Sequence[WarcSource], options: ExtractOptions) -> FilesResult:
    """Extract whole WARC files in a worker: ``(page lines, link lines, stats, warnings)``."""
    pages = bytearray()
    links = bytearray()
    keep = _KeepWarnings()
    stats = extract_warcs(
        paths, pages.extend, links.extend, options=options, reporter=keep, extractor=_worker
    )
    return bytes(pages), bytes(links), stats, keep.kept


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
        worker: Callable[[Sequence[WarcSource], ExtractOptions], FilesResult] | None = None,
    ):
        self.jobs = max(1, jobs)
        self.options = options or ExtractOptions()
        # what a worker runs on the files (tests pass one that dies)
        self.worker = worker or extract_files
        self._pool: cf.ProcessPoolExecutor | None = None

    def submit(self, paths: Sequence[WarcSource]) -> cf.Future[FilesResult]:
        """Start extracting ``paths``; the future fails with BrokenProcessPool if a
        worker dies (then :meth:`extract` redoes the files page by page)."""
        if self._pool is None:
            self._pool = _executor(self.jobs, self.options)
        try:
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
    ) -> ExtractStats:
        """Extract ``paths`` (or take the result of ``started``, a :meth:`submit` of the
        same paths) and write the lines, as :func:`extract_warcs` would."""
        future = started if started is not None else self.submit(paths)
        try:
            pages, links, stats, warnings = future.result()
        except cf.process.BrokenProcessPool:
            # A page killed its worker (a crash in the C parser, the OOM killer). Start
            # afresh and redo these files with the per-page recovery of extract_warcs.
            self.close()
            return extract_warcs(
                paths,
                write_pages,
                write_links,
                jobs=max(2, self.jobs),
                options=self.options,
                reporter=reporter,
            )
        _take((pages, links, {}, warnings), stats, write_pages, write_links, reporter)
        return stats

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
