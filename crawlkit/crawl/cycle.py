"""The post-processing of a cut cycle: extract → dedup → seen-merge and frontier add → recrawl.

:meth:`CycleRunner.finish_cycle` runs the steps of :data:`~crawlkit.crawl.steps.POST_STEPS`
not yet done, in order, each by the function the step carries, each marking itself
done; :class:`PostWorker` runs it on its own thread for the cycles the fetch side
cuts, so parsing overlaps fetching. :class:`CycleWarcs` finds a cycle's WARC records
wherever their file is now (being written, closed, archived).
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from crawlkit import streams
from crawlkit.crawl.admission import Admission, site_edges
from crawlkit.crawl.archive import LinkPolicy, adopt_file_index
from crawlkit.crawl.core import MERGE_CHUNK, Gate, Limits
from crawlkit.crawl.files import is_done, mark_done, read_file, write_file
from crawlkit.crawl.step_process import Started, StepProcess, dedup_cycle, recrawl_cycle
from crawlkit.crawl.steps import POST_STEPS, RECRAWL_HOLD_MU
from crawlkit.crawl.stores import Stores
from crawlkit.crawl.summary import CrawlSummary, progress_info
from crawlkit.diag import HeldReporter, NullReporter, Reporter
from crawlkit.frontier.sitelinks import SiteLinks
from crawlkit.html.page import HTML_TYPES, media_type
from crawlkit.records import Refusal
from crawlkit.stages.extract import (
    ExtractOptions,
    ExtractStopped,
    ExtractWorkers,
    FilesResult,
    extract_warcs,
)
from crawlkit.streams import Record
from crawlkit.warc.places import find_warc, warc_new_dir
from crawlkit.warc.write import index_of, named_by

__all__ = ["CycleRunner", "CycleWarcs", "FetchLogs", "PostWorker", "fetch_log"]

STYLESHEETS = "stylesheets.ndjson"  # STATE/crawl/: the first capture of each stylesheet
_SHEETS_LOCK = threading.Lock()


class CycleWarcs:
    """Where a cycle's WARC records are: its fetch log names them, their file moves
    (``.open`` → ``new/`` → the archive directory); and the first capture of each
    stylesheet, which a copy at another URL is parsed against."""

    def __init__(
        self, warc_root: Path, crawl_root: Path, reporter: Reporter, prefix: str | None = None
    ):
        self.root = warc_root
        self.crawl_root = crawl_root  # STATE/crawl: the stylesheets' first captures
        self.rep = reporter
        # A worker of ``crawl --workers`` shares the WARC directory with its peers: it
        # recovers and archives only the files of its own prefix (a peer's .open file
        # is being written, a peer's closed one may be being extracted).
        self.prefix = prefix
        self._first_sheets: dict[str, tuple[str, int, int]] | None = None
        # Each cycle's fetch log, parsed once for the cut and every post step.
        self.fetch_logs = FetchLogs()

    def originals(self, cycle: Path) -> dict[str, tuple[str, int, int]]:
        """payload digest -> (WARC file, offset, length) of the first capture of each
        stylesheet the cycle fetched, and of each page it fetched a copy of at another
        URL: a copy is stored as a revisit, and extract reads the body from there to
        parse the copy against its own URL. The first captures of stylesheets are
        kept in ``STATE/crawl/stylesheets.ndjson`` (one line each, appended), so a
        later cycle or run finds them; a page's copy names its first capture in its
        fetch record (``warc.refers_to``, from the fetcher's digests). Called from the
        fetch side (``-j`` N hands a cycle out when it is cut) and the post thread:
        one at a time, so the first capture of a digest is the one both see."""
        with _SHEETS_LOCK:
            return self._first_captures(cycle)

    def _first_captures(self, cycle: Path) -> dict[str, tuple[str, int, int]]:
        known = self._stylesheets()
        path = self.crawl_root / STYLESHEETS
        out: dict[str, tuple[str, int, int]] = {}
        new: list[Record] = []
        for rec in self.fetch_logs.records(cycle):
            digest, warc = rec.get("digest"), rec.get("warc")
            if rec.get("outcome") != "fetched" or not digest or not isinstance(warc, dict):
                continue
            kind = media_type(rec.get("content_type"))
            first = warc.get("refers_to")
            if kind in HTML_TYPES and isinstance(first, dict):  # a page's copy
                where = self.path_of(Path(str(first.get("file"))).name)
                if where is not None:
                    out[str(digest)] = (str(where), int(first["offset"]), int(first["length"]))
                continue
            if kind != "text/css":
                continue
            if digest not in known:
                place = (Path(str(warc["file"])).name, int(warc["offset"]), int(warc["length"]))
                known[str(digest)] = place
                new.append(
                    {"digest": digest, "file": place[0], "offset": place[1], "length": place[2]}
                )
            name, offset, length = known[str(digest)]
            where = self.path_of(name)
            if where is not None:
                out[str(digest)] = (str(where), offset, length)
        if new:
            with open(path, "ab") as f:
                f.write(b"".join(streams.dumps(r) for r in new))
        return out

    def _stylesheets(self) -> dict[str, tuple[str, int, int]]:
        """The first captures of stylesheets, read once from ``STATE/crawl``."""
        known = self._first_sheets
        if known is None:
            known = {}
            path = self.crawl_root / STYLESHEETS
            if path.exists():
                for rec in streams.read_records([path], self.rep):
                    digest = str(rec.get("digest"))
                    if digest not in known:
                        known[digest] = (str(rec["file"]), int(rec["offset"]), int(rec["length"]))
            self._first_sheets = known
        return known

    def path_of(self, name: str) -> Path | None:
        """Where the WARC file ``name`` is now: being written, closed, or archived."""
        return find_warc(self.root, name)

    def sources(self, cycle: Path) -> list[tuple[str, list[tuple[int, int]]]]:
        """The cycle's WARC records as (file, [(offset, length), ...]) from its fetch log.

        WARC files rotate by size (``--warc-size``), not by cycle: one file holds many
        cycles, and may still be written to while a cycle is extracted; the fetcher
        flushes it when it cuts the cycle, so every record named here is whole.
        """
        ranges: dict[str, list[tuple[int, int]]] = {}
        # robots.txt captures too: extract takes their Sitemap lines
        for rec in itertools.chain(
            self.fetch_logs.records(cycle), read_file(cycle / "robots.ndjson")
        ):
            warc = rec.get("warc")
            if isinstance(warc, dict) and warc.get("file"):
                name = Path(str(warc["file"])).name
                ranges.setdefault(name, []).append((int(warc["offset"]), int(warc["length"])))
        out = []
        for name, spans in ranges.items():
            path = self.path_of(name)
            if path is not None:
                out.append((str(path), spans))
        return out

    def owns(self, name: str) -> bool:
        """Whether the WARC file ``name`` is this crawl's to recover and archive: any
        file, or with a prefix only ``PREFIX-<time>...`` (so ``crawlkit-w1-...`` is not
        ``crawlkit``'s)."""
        return self.prefix is None or named_by(name, self.prefix)

    def archive_closed(self) -> int:
        """Move closed WARC files from ``new/`` to the archive directory itself; returns
        how many.

        Called only while no cycle is being extracted (a cycle finds its files in
        either place, see :meth:`path_of`).
        """
        moved = 0
        new_dir = warc_new_dir(self.root)
        for path in sorted(new_dir.glob("*.warc.gz")) if new_dir.exists() else []:
            if not self.owns(path.name):
                continue
            target = self.root / path.name
            if not target.exists():
                adopt_file_index(index_of(path), self.root, path.name)
                os.replace(path, target)
                moved += 1
        return moved


class CycleRunner:
    """The post-fetch steps of a cut cycle, one public method per step of
    :data:`POST_STEPS` (each step carries the function that calls it)."""

    def __init__(
        self,
        *,
        limits: Limits,
        stores: Stores,
        gate: Gate,
        admission: Admission,
        warcs: CycleWarcs,
        workers: ExtractWorkers | None,
        step_process: StepProcess | None,
        link_policy: LinkPolicy,
        recrawl: bool,
        reporter: Reporter,
        progress: Callable[[dict[str, Any]], None],
    ):
        self.limits = limits
        self.stores = stores
        self.gate = gate
        self.summary: CrawlSummary = gate.summary
        self.admission = admission
        self.warcs = warcs
        # N extract processes (-j N, one at least) live for the whole run and a cycle's
        # extract starts the moment it is cut (see start_extract): a page's parse never
        # holds this process (its fetch threads, its stop), and each page runs under the
        # workers' CPU deadline.
        self.workers = workers
        self._extracting: dict[Path, tuple[list[Any], cf.Future[FilesResult]]] = {}
        # The dedup and recrawl steps run in a process of their own (None: on the post
        # thread).
        self.step_process = step_process
        # Recrawl steps started with their cycle's dedup step, not yet taken.
        self._recrawling: dict[Path, Started[list[Record]] | None] = {}
        # The new records each cycle's seen merge wrote (by file name), until queued.
        self._written: dict[Path, dict[str, list[Record]]] = {}
        self.link_policy = link_policy
        self.recrawl_due = recrawl
        self.rep = reporter
        self.progress = progress

    def close(self) -> None:
        """Stop the extract and step processes (a run that ends or fails)."""
        for _files, future in self._extracting.values():
            future.cancel()
        self._extracting.clear()
        self._recrawling.clear()  # (the step process ends them before it stops)
        self._written.clear()
        if self.workers is not None:
            self.workers.close()
        if self.step_process is not None:
            self.step_process.close()

    def finish_cycle(self, cycle: Path) -> bool:
        """Run the cycle's steps not yet done; False if the hard stop came first."""
        for step in POST_STEPS:
            if not is_done(cycle, step.marker):
                if self.limits.past_hard_stop():
                    return False
                assert step.run is not None  # every post step carries its function
                step.run(self, cycle)
                if not is_done(cycle, step.marker):  # (extract stopped at the hard stop)
                    return False
        mark_done(cycle, "cycle")
        self.warcs.fetch_logs.forget(cycle)
        self.summary.cycles += 1
        self.progress(
            progress_info(self.summary, cycle.name, self.limits.clock() - self.limits.start)
        )
        return True

    def extract(self, cycle: Path) -> None:
        """extract: the pages and links of the cycle's WARC records."""
        started_with, started = self._extracting.pop(cycle, (None, None))
        while True:
            sources = self.warcs.sources(cycle)
            # What start_extract handed out stands if only a file's name changed since
            # (``.open`` renamed when it rotated, or at the end of the run): the records
            # are the same bytes, and parsing them again could outlast the hard stop.
            reuse = started_with is not None and _same_records(started_with, sources)
            read = started_with if reuse and started_with is not None else sources
            # Held until the attempt is known to stand: one redone below failed only to
            # open a name that moved, and its lines would report a loss that is none.
            said = HeldReporter()
            try:
                with (
                    streams.open_output(cycle / "pages.ndjson.zst") as pages,
                    streams.open_output(cycle / "links.ndjson.zst") as links,
                ):
                    originals = self.warcs.originals(cycle)
                    if self.workers is not None:
                        stats = self.workers.extract(
                            sources,
                            pages.write,
                            links.write,
                            reporter=said,
                            started=started if reuse else None,
                            originals=originals,
                            # A page's CPU deadline does not bound the wall clock of a
                            # loaded machine: the hard stop does.
                            stop=self.limits.past_hard_stop,
                        )
                    else:
                        stats = extract_warcs(
                            sources,
                            pages.write,
                            links.write,
                            options=ExtractOptions(),
                            reporter=said,
                            originals=originals,
                        )
            except BaseException as exc:
                said.release(self.rep)  # the attempt stands: stopped, or failed
                if isinstance(exc, ExtractStopped):
                    return  # not marked done: the next run extracts this cycle
                raise
            # The WARC file being written is renamed when it rotates; if that came
            # between finding it and opening it, its records were not read (a file that
            # could not be opened counts as damaged): again. Opened before the rename,
            # it was read whole.
            renamed = any(name.endswith(".open") and not Path(name).exists() for name, _ in read)
            if not (renamed and stats.damaged_files):
                said.release(self.rep)
                break
            started_with = None
        self.summary.pages += stats.pages
        self.summary.links += stats.links
        self.summary.capped_pages += stats.capped
        self.summary.page_errors += stats.errors
        mark_done(cycle, "extract", {"pages": stats.pages, "links": stats.links})

    def dedup(self, cycle: Path) -> None:
        """dedup: exact and near duplicates; the site records go to the frontier.

        The step process runs it (off this process's interpreter lock; if it died,
        this thread), and then the cycle's recrawl step: both read only the cycle's
        fetch log, pages and links. Meanwhile this thread runs the links step's seen
        merge (marked ``seen``; a crash between the two leaves ``seen`` done and
        ``dedup`` not, and the next run dedups and then queues the merge's file).
        """
        process = self.step_process
        started = process.start_dedup(cycle) if process is not None else None
        if process is not None and self.recrawl_due and not is_done(cycle, "recrawl"):
            self._recrawling[cycle] = process.start_recrawl(
                cycle, self.limits.clock(), RECRAWL_HOLD_MU
            )
        if started is not None:
            # While the step process dedups, this thread merges the cycle's links
            # into the seen set: the seen merge reads neither the dedup index nor
            # its site records, and waiting for them left this thread, the crawl's
            # pace, idle ~15% of each cycle. Its new URLs are queued by the links
            # step, after the site records below, as before.
            self._merge_links(cycle)
        done = process.take(started, self.rep) if process is not None else None
        if done is None:
            done = dedup_cycle(self.stores.dedup(), cycle, self.rep)
        # (site records take the frontier's generic record path)
        self.gate.queue(done.sites, cycle / "sites-refused.ndjson.zst")
        self.summary.dedup.update({"exact": done.exact, "near": done.near, "unique": done.unique})
        mark_done(cycle, "dedup", {"exact": done.exact, "near": done.near})

    def links(self, cycle: Path) -> None:
        """Links and redirects → seen-merge --scope → frontier add; deferred → waiting room.

        Each attempt writes its new URLs to its own file before the seen set commits
        them: a crash between the commit and the queueing repeats URLs (at least
        once), never loses them (invariant 4). An attempt after a crash takes in the
        files of the attempts before it (killed before or after their commit: their
        URLs may be new again, or seen and in no other file) and leaves one file with
        each URL once, so a crash before the commit does not queue the cycle's new URLs
        twice (each copy handed out and counted against its site's budget).
        """
        self._merge_links(cycle)
        # The records of the new-N file this run's merge wrote: queued from memory,
        # the file is read back only after a crash (JSON gives back what it was given).
        written = self._written.pop(cycle, {})
        for path in sorted(cycle.glob("new-*.ndjson.zst"), key=_attempt):
            # Each file is marked queued once the frontier has committed it: a crash
            # after that queues it again only if it falls between the two (a URL
            # queued twice is handed out twice, and counted twice against its budget).
            queued = cycle / (path.name.split(".", 1)[0] + ".queued")
            if not queued.exists():
                records = written.get(path.name)
                self.gate.queue(
                    records if records is not None else read_file(path),
                    cycle / "new-refused.ndjson.zst",
                )
                queued.touch()
        self._wait_deferred(cycle)
        mark_done(cycle, "links")

    def _merge_links(self, cycle: Path) -> None:
        """The links step's seen merge, once (marked ``seen``): the cycle's links,
        redirects and inbox through seen-merge ``--scope`` into a new-N file, the
        site links noted; the new records kept for :meth:`links` to queue."""
        if is_done(cycle, "seen"):
            return
        refused_path = cycle / "links-refused.ndjson.zst"
        # A shard's inbox (other shards' links and site links) is admitted with
        # the cycle's own links: one commit of each store for both.
        delivered = self.admission.take_inbox(cycle)
        fetched = {str(r.get("url")): r for r in self.warcs.fetch_logs.records(cycle)}
        site_links = SiteLinks()  # every link, not only new URLs, feeds site importance
        refused: list[Refusal] = []
        pairs: set[tuple[str, str]] = set()  # site links for the other shards
        router = self.gate.router(f"c{cycle.name}")

        def candidates() -> Iterator[Record]:
            """The links and redirects to merge, read a slice at a time (the seen
            merge takes them as it goes: see MERGE_CHUNK), then the inbox's URLs
            (sorted by the shard that found them)."""
            for part in _slices(read_file(cycle / "links.ndjson.zst"), MERGE_CHUNK):
                site_links.add(part)
                pairs.update(self.admission.site_link_pairs(part))
                kept, refusals = self.link_policy.sort(part, lambda _rec: True, fetched)
                refused.extend(refusals)
                yield from router.mine(kept)
            kept, refusals = self.link_policy.sort(
                read_file(cycle / "redirects.ndjson"), lambda _rec: True, fetched
            )
            refused.extend(refusals)
            site_links.add(delivered)
            kept += [r for r in delivered if r.get("url")]
            yield from router.mine(kept)
            router.send(site_edges(pairs))

        earlier = sorted(cycle.glob("new-*.ndjson.zst"), key=_attempt)
        attempt = _attempt(earlier[-1]) + 1 if earlier else 1
        out = cycle / f"new-{attempt}.ndjson.zst"
        merged = self.gate.seen_merge(
            candidates(),
            out,
            cycle / "scope-refused.ndjson.zst",
            carry=[r for path in earlier for r in read_file(path)],
        )
        write_file(refused_path, refused)
        self.gate.count_refused(refused)
        # (before the step is marked done: a retry notes the links again)
        self.gate.note_site_links(site_links)
        self._written[cycle] = {out.name: merged.written}
        for path in earlier:  # their URLs are in the new file
            path.unlink()
        self.summary.new_urls += len(merged.fresh)
        mark_done(cycle, "seen", {"new": len(merged.fresh)})

    def recrawl(self, cycle: Path) -> None:
        """recrawl: the change history; URLs due again are queued. The step process
        runs the step (started with the dedup step, or now); if it died, this thread."""
        started = self._recrawling.pop(cycle, None)
        if not self.recrawl_due:
            mark_done(cycle, "recrawl", {"due": 0})
            return
        process = self.step_process
        if process is not None and started is None:
            started = process.start_recrawl(cycle, self.limits.clock(), RECRAWL_HOLD_MU)
        due = process.take(started, self.rep) if process is not None else None
        if due is None:
            # The fetch log as parsed for the steps before (read again, reporting to
            # this run's reporter, only when it had a bad line).
            logged = self.warcs.fetch_logs.lines(cycle, self.rep)
            due = recrawl_cycle(
                self.stores.history,
                cycle,
                self.limits.clock(),
                RECRAWL_HOLD_MU,
                self.rep,
                logged=logged,
            )
        self.gate.queue(due, cycle / "recrawl-refused.ndjson.zst")
        mark_done(cycle, "recrawl", {"due": len(due)})

    def _wait_deferred(self, cycle: Path) -> None:
        """The cycle's deferred URLs into the waiting room (again after a crash: once)."""
        deferred = [
            orjson.loads(streams.dumps(r))  # a copy of its own: the log's is shared
            for r in self.warcs.fetch_logs.records(cycle)
            if r.get("outcome") == "deferred"
        ]
        if not deferred:
            return
        with self.stores.lock:
            self.stores.waiting.add(deferred)
            self.stores.waiting.save()

    def start_extract(self, cycle: Path) -> None:
        """Hand a cut cycle's WARC records to an extract process now (``-j`` >= 2), so
        it parses while the post thread still works on the cycles before it."""
        if self.workers is None:
            return
        sources = self.warcs.sources(cycle)
        if sources:
            originals = self.warcs.originals(cycle)
            self._extracting[cycle] = (sources, self.workers.submit(sources, originals))

    def archive_closed_warcs(self) -> None:
        """Move closed WARC files to the archive directory (no cycle being extracted)."""
        self.summary.warc_files += self.warcs.archive_closed()


def _same_records(
    a: list[tuple[str, list[tuple[int, int]]]], b: list[tuple[str, list[tuple[int, int]]]]
) -> bool:
    """Whether two lists of sources name the same records, wherever their file is now
    (a file keeps its name but for ``.open`` as it moves, see :meth:`CycleWarcs.path_of`)."""

    def key(sources: list[tuple[str, list[tuple[int, int]]]]) -> list[tuple[str, list[Any]]]:
        return [(Path(path).name.removesuffix(".open"), spans) for path, spans in sources]

    return key(a) == key(b)


def fetch_log(cycle: Path) -> list[Record]:
    """The fetch records of ``cycle`` (read from its file; see :class:`FetchLogs`)."""
    return list(read_file(cycle / "fetch.ndjson"))


class _Noting(NullReporter):
    """A reporter that says nothing and remembers whether a record was bad."""

    def __init__(self) -> None:
        super().__init__()
        self.bad = False

    def bad_record(self, source: str, line: int, message: str) -> None:
        self.bad = True


class FetchLogs:
    """Each cut cycle's fetch log (``fetch.ndjson``), parsed once.

    The cut (extract's sources, the stylesheets) and the post steps (extract again,
    links, the waiting room, recrawl) each read the log: five to seven parses of the
    same 500 records a cycle, on the threads that share the interpreter lock. A log is
    final once its cycle is cut (closed and fsynced; a recovery's cut of an earlier
    run's log changes its size, and the log is then read again). The lists handed out
    are shared: callers only read them (a record to keep is copied). A cycle's entry
    is dropped once the cycle is done.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs: dict[Path, tuple[tuple[int, int], bool, list[tuple[str, int, Record]]]] = {}

    def lines(self, cycle: Path, reporter: Reporter | None = None) -> list[tuple[str, int, Record]]:
        """``(source, line number, record)`` of each record of the log, as
        :func:`crawlkit.streams.read_records_with_lines` yields them; a log with a bad
        line is read again with ``reporter`` (given), which then hears of it."""
        path = cycle / "fetch.ndjson"
        try:
            st = path.stat()
        except FileNotFoundError:
            return []
        key = (st.st_size, st.st_mtime_ns)
        with self._lock:
            hit = self._logs.get(cycle)
        if hit is None or hit[0] != key:
            noting = _Noting()
            items = list(streams.read_records_with_lines([path], noting))
            hit = (key, noting.bad, items)
            with self._lock:
                self._logs[cycle] = hit
        if hit[1] and reporter is not None:
            return list(streams.read_records_with_lines([path], reporter))
        return hit[2]

    def records(self, cycle: Path) -> list[Record]:
        """The fetch records of ``cycle`` (shared: read them, do not change them)."""
        return [rec for _, _, rec in self.lines(cycle)]

    def forget(self, cycle: Path) -> None:
        with self._lock:
            self._logs.pop(cycle, None)


def _slices(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    """``records`` in lists of ``size`` (the last one shorter)."""
    it = iter(records)
    while part := list(itertools.islice(it, size)):
        yield part


def _attempt(path: Path) -> int:
    """The attempt number N of a cycle's ``new-N.ndjson.zst`` file."""
    return int(path.name.split(".", 1)[0].rsplit("-", 1)[1])


class PostWorker:
    """One thread that runs the post-fetch steps of cut cycles, in order."""

    def __init__(self, cycles: CycleRunner):
        self.cycles = cycles
        self.error: BaseException | None = None
        # Seconds spent post-processing, and since when the current cycle (for a timeline)
        self.busy_seconds = 0.0
        self.busy_since: float | None = None
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="crawl-post", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            cycle = self._queue.get()
            if cycle is None:
                self._queue.task_done()
                return
            self.busy_since = time.monotonic()
            try:
                if self.error is None:
                    self.cycles.finish_cycle(cycle)
            except BaseException as exc:  # handed to the fetch loop, which stops
                self.error = exc
            finally:
                self.busy_seconds += time.monotonic() - self.busy_since
                self.busy_since = None
                self._queue.task_done()

    def submit(self, cycle: Path) -> None:
        self._queue.put(cycle)

    def busy_total(self) -> float:
        """Seconds spent post-processing so far, the cycle in hand included."""
        total, since = self.busy_seconds, self.busy_since  # in this order: never twice
        return total + (time.monotonic() - since if since is not None else 0.0)

    def backlog(self) -> int:
        """Cut cycles submitted and not yet post-processed."""
        return self._queue.unfinished_tasks

    def busy(self) -> bool:
        # unfinished_tasks counts a cycle from put() to task_done(), so there is no
        # moment between get() and the work starting when it reads as idle.
        return self._queue.unfinished_tasks > 0

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
