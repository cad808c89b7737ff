"""The worker processes of ``crawlkit extract``: a pool that survives a worker's death,
the wait that a crawl's hard stop can cut, and how workers are started.

Split from :mod:`crawlkit.stages.extract` (which reads the WARC files, chunks their
records and writes the lines): this module knows processes, not WARC files. Each page
is parsed by :mod:`crawlkit.stages.extract_page` in a worker under its CPU deadline;
a worker that dies on a page is replaced and the page recorded from a bounded scan of
its bytes (:func:`~crawlkit.stages.extract_page.lost_page`).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from crawlkit.diag import Reporter
from crawlkit.html.fallback import quick_page
from crawlkit.html.page import HtmlExtractor
from crawlkit.stages.extract_page import (
    ChunkResult,
    ExtractOptions,
    Job,
    init_worker,
    lost_page,
    texts_chunk,
)

__all__ = ["ChunkPool", "ExtractStopped", "executor", "page_texts", "wait_result"]


class ChunkPool:
    """Worker processes that survive a worker's death.

    If a worker dies (the CPU deadline on one page, a crash in the C parser, the OOM
    killer), every chunk in flight fails with BrokenProcessPool. The pool is then
    rebuilt, the chunk at the head is redone one page at a time so the page that kills
    a worker is found and recorded by :func:`lost_page` (here, from a bounded scan of
    its bytes), and the chunks behind it are resubmitted; the output order does not
    change.
    """

    def __init__(
        self,
        jobs: int,
        options: ExtractOptions,
        worker: Callable[[Sequence[Job]], ChunkResult],
        fork: bool = True,
        stop: Callable[[], bool] | None = None,
    ):
        self.jobs = jobs
        self.options = options
        self.worker = worker
        self.fork = fork
        self.stop = stop
        self.executor = self._new()
        self._parser: HtmlExtractor | None = None  # this process's, for lost pages

    def _lost(self, job: Job, exitcode: int | None) -> ChunkResult:
        if self._parser is None:
            self._parser = self.options.parser()
        return lost_page(job, self._parser, exitcode, self.options.requisites)

    def _new(self) -> cf.ProcessPoolExecutor:
        return executor(self.jobs, self.options, self.fork)

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
            result = wait_result(future, self.stop, self.executor)
        except cf.process.BrokenProcessPool:
            if self.jobs == 1 and len(chunk) == 1:
                # One worker runs the chunks in order: the one it died on is this page.
                workers = list(getattr(self.executor, "_processes", {}).values())
                self._restart()
                result = self._lost(chunk[0], _death(workers))
            else:
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
            future = self.submit([job])
            workers = list(getattr(self.executor, "_processes", {}).values())
            try:
                p, lk, c, w = wait_result(future, self.stop, self.executor)
            except cf.process.BrokenProcessPool:
                self._restart()
                p, lk, c, w = self._lost(job, _death(workers))
            pages.append(p)
            links.append(lk)
            counts.update(c)
            warnings.extend(w)
        return b"".join(pages), b"".join(links), dict(counts), warnings

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


class ExtractStopped(Exception):
    """Raised by a wait for a worker when its ``stop`` callable says so; the workers
    are ended first (what they were parsing is redone by the next run)."""


def wait_result(
    future: cf.Future[Any],
    stop: Callable[[], bool] | None,
    pool: cf.ProcessPoolExecutor | None,
) -> Any:
    """``future``'s result; with ``stop``, looked at four times a second, the pool's
    workers are ended and :class:`ExtractStopped` raised once it returns True."""
    if stop is None:
        return future.result()
    while True:
        try:
            return future.result(timeout=0.25)
        except cf.TimeoutError:
            if stop():
                if pool is not None:
                    _end_workers(pool)
                raise ExtractStopped("stopped while extracting") from None


def _end_workers(pool: cf.ProcessPoolExecutor) -> None:
    """End a pool's workers now (SIGTERM), whatever they are doing, and the pool."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        proc.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


def _death(workers: list[Any]) -> int | None:
    """How the worker that died ended (its exit code: -SIGPROF for the CPU deadline),
    from the pool's processes as they were when the page was handed out; None if not
    known. The others are ended by the pool itself, with SIGTERM.

    Call it after the pool's shutdown: the pool's manager thread joins its workers
    too, and a forkserver worker's exit code is read once from a pipe, so a join racing
    it reads the pipe's end and takes 255 (2 in 60 deaths here) for -SIGPROF."""
    codes = []
    for proc in workers:
        proc.join(5)
        codes.append(proc.exitcode)
    died = [code for code in codes if code not in (None, 0, -signal.SIGTERM)]
    return died[0] if died else None


def executor(jobs: int, options: ExtractOptions, fork: bool = True) -> cf.ProcessPoolExecutor:
    """Worker processes with a parser each.

    Forking is the cheapest start, but only safe while this process has one thread: a
    fork copies locks that other threads hold (``crawlkit crawl`` runs extract beside
    its fetch threads), so a threaded process starts workers from a fork server. So
    does one that holds files its workers must not keep open (``fork`` False: the
    crawl's state lock, which a forked worker would hold after a crash of the crawl).
    """
    methods = multiprocessing.get_all_start_methods()
    if fork and "fork" in methods and threading.active_count() == 1:
        method = "fork"
    elif "forkserver" in methods:
        method = "forkserver"
    else:
        method = "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        # The server imports the parser once; each worker forked from it starts warm.
        context.set_forkserver_preload(["crawlkit.stages.extract_page"])
    return cf.ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=init_worker,
        initargs=(options, os.getpid()),
    )


def page_texts(
    items: Iterable[tuple[str, bytes, str | None]],
    options: ExtractOptions | None = None,
    chunk_records: int = 32,
) -> Iterator[tuple[str | None, str]]:
    """``(title, visible text)`` of each ``(url, body, content_type)``, in order, as
    ``crawlkit extract`` computes them: parsed in one worker process under the CPU
    deadline of ``options``, so no page holds the caller up (``crawlkit wacz``'s page
    list). A page that runs out of its deadline, or kills the worker, gives the title
    of a bounded scan of its bytes and an empty text."""
    options = options or ExtractOptions()
    pool = executor(1, options)
    parser: HtmlExtractor | None = None
    pending: deque[tuple[list[tuple[str, bytes, str | None]], cf.Future[Any]]] = deque()

    def lost(item: tuple[str, bytes, str | None]) -> tuple[str | None, str]:
        nonlocal parser
        parser = parser or options.parser()
        return quick_page(parser, item[1], item[0], content_type=item[2]).title, ""

    def take() -> Iterator[tuple[str | None, str]]:
        nonlocal pool
        items_, future = pending.popleft()
        try:
            yield from future.result()
            return
        except cf.process.BrokenProcessPool:
            pass
        pool.shutdown(wait=True, cancel_futures=True)
        pool = executor(1, options)
        for item in items_:  # one at a time: the page it dies on is known
            try:
                yield from pool.submit(texts_chunk, [item]).result()
            except cf.process.BrokenProcessPool:
                pool.shutdown(wait=True, cancel_futures=True)
                pool = executor(1, options)
                yield lost(item)
        for i, (later, _) in enumerate(pending):  # lost with the worker: again
            pending[i] = (later, pool.submit(texts_chunk, later))

    try:
        batch: list[tuple[str, bytes, str | None]] = []
        for item in items:
            batch.append(item)
            if len(batch) >= chunk_records:
                pending.append((batch, pool.submit(texts_chunk, batch)))
                batch = []
                while len(pending) >= 2:
                    yield from take()
        if batch:
            pending.append((batch, pool.submit(texts_chunk, batch)))
        while pending:
            yield from take()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
