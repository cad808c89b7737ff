"""The per-page work of ``crawlkit extract``, as worker processes run it.

:func:`process_chunk` turns a chunk of WARC responses (:data:`Job`, plain picklable
values) into page records and link records; :func:`init_worker` gives each worker
process its parser. :mod:`crawlkit.stages.extract` reads the WARC files, hands out the
chunks and writes what comes back in order.

Each record's work in a worker process runs under a CPU deadline
(:func:`cpu_budget`: ``page_cpu`` seconds, plus ``page_cpu_per_mb`` for each MB of
body): the kernel's profiling timer (``ITIMER_PROF``) delivers SIGPROF when the
process has spent it, and SIGPROF's default action ends the process, wherever it is
(in Lexbor's C code too, which no Python handler could interrupt). The parent sees
the worker die, redoes the chunk a page at a time, and records the page that dies
again from :func:`crawlkit.html.fallback.quick_page` with ``"capped": ["time"]``
(:func:`lost_page`). No markup escapes that bound; the guard
(:mod:`crawlkit.html.guard`) only makes the shapes it knows cheap and keeps their
content.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import orjson

from crawlkit.collector import collect_by_clock
from crawlkit.errors import InvalidURL
from crawlkit.heap import map_large_blocks
from crawlkit.html.css import css_refs, decode_css
from crawlkit.html.fallback import quick_page
from crawlkit.html.page import MAX_HTML_BYTES, MAX_LINKS, HtmlExtractor, Link, Page
from crawlkit.records import link_fields, page_record
from crawlkit.sitemap.discover import robots_records, sitemap_records
from crawlkit.sitemap.parse import MAX_SITEMAP_BYTES
from crawlkit.url import Canonicalizer, ParsedURL, Rules, set_process_rules
from crawlkit.warc.payload import MAX_BODY

__all__ = [
    "ChunkResult",
    "ExtractOptions",
    "ExtractStats",
    "Job",
    "WarcSource",
    "cpu_budget",
    "end_with_owner",
    "init_worker",
    "link_priority",
    "lost_page",
    "process_chunk",
    "texts_chunk",
    "worker_extractor",
]

_NL = orjson.OPT_APPEND_NEWLINE

PAGE_CPU = 0.5
"""CPU seconds a worker may spend on one record, plus :data:`PAGE_CPU_PER_MB` a MB of
its body. Real pages take a few ms: the slowest of 1,220 real pages took 0.1 s (0.43
MB, 0.22 s a MB), seven times under its budget; every hostile shape the guard knows
stays under 0.3 s at 5 MB (``bench/bench_extract.py --hostile``)."""
PAGE_CPU_PER_MB = 0.5


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
    page_cpu: float = PAGE_CPU  # a worker's CPU deadline per record (0: none) ...
    page_cpu_per_mb: float = PAGE_CPU_PER_MB  # ... plus this a MB of body
    # The crawler's product token (robots.txt's, of --agent): the <meta name> and the
    # X-Robots-Tag prefix besides "robots" whose directives it obeys.
    agent: str = "crawlkit"

    def parser(self) -> HtmlExtractor:
        """A page parser with these caps and this agent."""
        return HtmlExtractor(
            Canonicalizer(self.rules),
            max_html_bytes=self.max_html_bytes,
            max_links=self.max_links,
            agent=self.agent,
        )


@dataclass(slots=True)
class ExtractStats:
    """Counts for the summary line. ``errors`` counts pages recorded with an ``error``
    (a step raised, the parser died or ran out of time) and records that gave nothing
    (a stylesheet or sitemap whose parser died); ``capped`` counts pages over a cap
    (``time`` included). A page can be both."""

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
            f"{self.errors} page errors, {self.capped} pages capped"
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
#  truncated, kind: "html", "css", "robots", "sitemap", or "copy": a page's copy at
#  another URL, parsed for its links alone, its page record being the first capture's)
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


def worker_extractor() -> HtmlExtractor | None:
    """The parser :func:`init_worker` made in this worker process (None elsewhere)."""
    return _worker


def cpu_budget(options: ExtractOptions, size: int) -> float:
    """The CPU seconds a worker may spend on a record of ``size`` bytes (0: no limit)."""
    if options.page_cpu <= 0:
        return 0.0
    return options.page_cpu + options.page_cpu_per_mb * size / 1e6


def init_worker(options: ExtractOptions, owner: int | None = None) -> None:
    """Make this worker process's parser; ``owner`` is the process whose pool it is
    (the worker ends itself when that one is gone)."""
    global _worker, _want_requisites, _deadline
    # Ctrl-C reaches the whole process group. The parent decides what an interrupt
    # means (crawl and fetch stop gracefully on the first one) and shuts the workers
    # down; a worker dying of it mid-page would turn that into a failed run.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    map_large_blocks()  # a body or batch buffer freed goes back at once (crawlkit/heap.py)
    set_process_rules(options.rules)  # (a sitemap's URLs are named as the pages' links)
    _worker = options.parser()
    _want_requisites = options.requisites
    # Lazy set-up (tables, the suffix list) is paid here, not from the first page's time.
    # (A page that fails the way the warm-up does is recorded with its error.)
    with contextlib.suppress(Exception):
        _worker.extract(b"<title>t</title><a href='/x'>x</a>", "http://warm-up.invalid/")
    # The deadline's signal must end the process (its default action), whatever the
    # parent had installed.
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    _deadline = options
    end_with_owner(owner or os.getppid())
    collect_by_clock()  # after the warm-up, which it freezes (crawlkit/collector.py)


def end_with_owner(owner: int) -> None:
    """End this process once process ``owner`` is gone (see :func:`_orphan_watch`)."""
    threading.Thread(target=_orphan_watch, args=(owner,), daemon=True).start()


def _orphan_watch(owner: int) -> None:
    """End this worker once the process that owns its pool is gone (killed, say): a
    pool worker waits on its task queue forever otherwise, and keeps what it holds (a
    fork server's worker keeps the server alive too)."""
    while _alive(owner):
        time.sleep(0.5)
    os._exit(0)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs: it exists and (on Linux) is no zombie (a killed
    process stays one until its parent waits for it, and a parent reading the
    process's output waits for the pipes this worker also holds)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # (another user's process: reused)
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return True


_want_requisites = True
_deadline: ExtractOptions | None = None  # set in worker processes: arm the CPU timer


def _work_size(job: Job) -> int:
    """The bytes a record's parse reads, which its CPU deadline is set by: a gzip
    sitemap's decoded size (its gzip trailer says it, up to the sitemap cap), not
    the 5-180x smaller bytes fetched. By the fetched size a sitemap of 20,000 URLs
    (577 KB of gzip, 4.5 MB of XML) ran out of time and gave none of its URLs."""
    body = job[7]
    if job[9] == "sitemap" and body[:2] == b"\x1f\x8b" and len(body) >= 18:
        decoded = int.from_bytes(body[-4:], "little")  # ISIZE: the size mod 2**32
        return max(len(body), min(decoded, MAX_SITEMAP_BYTES))
    return len(body)


def _arm(size: int) -> None:
    """Start this worker's CPU deadline for a record of ``size`` bytes (no-op outside
    a worker)."""
    if _deadline is not None:
        seconds = cpu_budget(_deadline, size)
        if seconds > 0:
            signal.setitimer(signal.ITIMER_PROF, seconds)


def _disarm() -> None:
    if _deadline is not None:
        signal.setitimer(signal.ITIMER_PROF, 0)


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
    heads = _HEADS
    if len(heads) > _MAX_HEADS:
        heads.clear()
    for link in links:
        target_url = link.url
        head = heads.get(target_url.url)
        if head is None:
            head = heads[target_url.url] = (
                orjson.dumps(
                    {
                        "url": target_url.url,
                        "host": target_url.host,
                        "site": target_url.site,
                        "fp": target_url.fp,
                    }
                )[:-1]
                + b","
            )
        out.append(b"".join((head, tails[link.nofollow], b',"tag":"', _TAGS[link.tag], b'"}\n')))


# The "url" ... "fp" part of a link record by URL: a site's navigation links and
# requisites repeat on every page, so most are serialized once a worker.
_HEADS: dict[str, bytes] = {}
_MAX_HEADS = 100_000


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

    Never raises for one page: a page whose parse raises is recorded from the bounded
    scan (:func:`crawlkit.html.fallback.quick_page`) with an ``error``, and counted.
    ``extractor`` and ``want_requisites`` are for the calling process; a worker process
    uses the parser and setting its initializer made, and runs each record under its
    CPU deadline.
    """
    keep_requisites = _want_requisites if extractor is None else want_requisites
    ex = extractor if extractor is not None else _worker
    assert ex is not None, "worker not initialised"
    out = _Out()
    for job in jobs:
        _arm(_work_size(job))
        pages, links = len(out.pages), len(out.links)
        try:
            _one(job, ex, keep_requisites, out)
        except Exception as exc:  # a bug met on one response: reported, never the run's end
            del out.pages[pages:], out.links[links:]
            out.counts["errors"] += 1
            why = f"{type(exc).__name__}: {exc}"[:300]
            out.warnings.append(
                (f"{job[0][:200]}: cannot read it ({why}); passed over", "page error")
            )
        finally:
            _disarm()
    return out.result()


class _Out:
    """The lines, counts and warnings of a chunk as they are made."""

    def __init__(self) -> None:
        self.pages: list[bytes] = []
        self.links: list[bytes] = []
        self.counts: Counter[str] = Counter()
        self.warnings: list[tuple[str, str]] = []

    def result(self) -> ChunkResult:
        return b"".join(self.pages), b"".join(self.links), dict(self.counts), self.warnings


def _one(job: Job, ex: HtmlExtractor, keep_requisites: bool, out: _Out) -> None:
    """The records of one response, added to ``out``."""
    target, _fa, _dg, _st, ctype, x_robots, _dp, body, _tr, kind = job
    if kind == "css":
        if keep_requisites:
            _stylesheet(job, ex, out.links, out.counts)
        return
    if kind in ("robots", "sitemap"):
        _discovered(job, ex, out.links, out.counts, out.warnings)
        return
    try:
        page_url = ex.canon.parse(target)
    except InvalidURL as exc:
        out.counts["bad_url"] += 1
        out.warnings.append((f"{target[:200]}: {exc}", "unusable URL"))
        return
    try:
        page = ex.extract(body, target, content_type=ctype, x_robots_tag=x_robots)
    except Exception as exc:  # one page never ends the run, nor goes unrecorded
        page = quick_page(
            ex,
            body,
            target,
            content_type=ctype,
            x_robots_tag=x_robots,
            error=f"cannot parse ({type(exc).__name__}: {exc})"[:500],
        )
    _write_page(job, page_url, page, keep_requisites, out)


def _write_page(
    job: Job, page_url: ParsedURL, page: Page, keep_requisites: bool, out: _Out
) -> None:
    """Add ``page``'s record and link records to ``out``, and count it."""
    _url, fetched_at, digest, status, ctype, _xr, depth, _body, truncated, _kind = job
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
        out.counts["capped"] += 1
        out.warnings.append(
            (
                f"{page_url.url}: over the {' and '.join(page.capped)} cap; parsed up to it",
                "capped page",
            )
        )
    if page.error:
        record["error"] = page.error
        out.counts["errors"] += 1
        out.warnings.append((f"{page_url.url}: {page.error}", "page error"))
    if _kind != "copy":  # a copy's page is the first capture's (dedup, site yield)
        out.pages.append(orjson.dumps(record, option=_NL))
        out.counts["pages"] += 1
    _link_lines(page.links, page_url.url, depth, "link", out.links)
    if keep_requisites:
        _link_lines(page.requisites, page_url.url, depth, "requisite", out.links)
        out.counts["requisites"] += len(page.requisites)
    out.counts["links"] += len(page.links)


def lost_page(
    job: Job, ex: HtmlExtractor, exitcode: int | None, want_requisites: bool = True
) -> ChunkResult:
    """The records of a response whose worker process died on it (run in the parent).

    A page is recorded from the bounded scan, with ``"capped": ["time"]`` when its
    worker was ended by the CPU deadline (SIGPROF), else with an ``error`` naming how
    it died. A stylesheet, robots.txt or sitemap gives a warning and an error count.
    """
    out = _Out()
    target, kind, size = job[0], job[9], len(job[7])
    timed_out = exitcode == -signal.SIGPROF
    why = (
        f"ran out of CPU time (deadline for {size:,} bytes)"
        if timed_out
        else f"the parser process died on it (exit code {exitcode})"
    )
    try:
        page_url = ex.canon.parse(target) if kind in ("html", "copy") else None
    except InvalidURL as exc:
        out.counts["bad_url"] += 1
        out.warnings.append((f"{target[:200]}: {exc}", "unusable URL"))
        return out.result()
    if page_url is None:
        out.counts["errors"] += 1
        out.warnings.append((f"{target[:200]}: {why}; passed over", "page error"))
        return out.result()
    page = quick_page(
        ex,
        job[7],
        target,
        content_type=job[4],
        x_robots_tag=job[5],
        capped=["time"] if timed_out else [],
        error=None if timed_out else why,
    )
    _write_page(job, page_url, page, want_requisites, out)
    return out.result()


def texts_chunk(items: Sequence[tuple[str, bytes, str | None]]) -> list[tuple[str | None, str]]:
    """``(title, visible text)`` of each ``(url, body, content_type)``, in a worker
    (under its CPU deadline); a page whose parse raises gives the title of the bounded
    scan and no text."""
    ex = _worker
    assert ex is not None, "worker not initialised"
    out: list[tuple[str | None, str]] = []
    for url, body, ctype in items:
        _arm(len(body))
        try:
            try:
                page = ex.extract(body, url, content_type=ctype)
            except Exception:
                page = quick_page(ex, body, url, content_type=ctype)
            out.append((page.title, page.text))
        finally:
            _disarm()
    return out
