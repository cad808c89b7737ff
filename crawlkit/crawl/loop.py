"""``crawlkit crawl``: the whole loop in one command, as a composition of the stages.

A crawl is a state directory and a sequence of *cycles*. Each cycle runs the steps of
:data:`crawlkit.crawl.steps.STEPS` (the docs/design.md pipeline) with the stages' own
library functions, on the same state directory:

    frontier next  →  fetch  →  extract  →  dedup  →  seen-merge  →  frontier add
                                                         recrawl  →  frontier add

and leaves its files in ``STATE/crawl/cycles/NNNNNN/``, so every cycle can be
inspected, replayed or re-run by hand with the stage commands (``crawlkit crawl
--explain`` prints them, from the same list). :meth:`Crawl._run` is the loop:
recover what the last run left, then until a limit or an empty frontier, queue the
deferred URLs now due and run the fetch side, which cuts cycles as it goes and hands
them to post-processing.

:class:`Crawl` holds one collaborator per job (see ``README.md`` here), each given
the few others it uses: :class:`~crawlkit.crawl.stores.Stores` (the opened stores and
their locks), :class:`~crawlkit.crawl.core.Limits` (when to stop),
:class:`~crawlkit.crawl.core.Gate` (seen-merge and frontier add),
:class:`~crawlkit.crawl.admission.Admission` (seeds, a shard's inbox),
:class:`~crawlkit.crawl.cycle.CycleRunner` (the post-fetch steps),
:class:`~crawlkit.crawl.recovery.Recovery` (what a killed run left) and
:class:`~crawlkit.crawl.feed.Feed` and :class:`~crawlkit.crawl.fetchrun.FetchRun` (the
fetch side).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from crawlkit.crawl.admission import Admission
from crawlkit.crawl.archive import LinkPolicy, update_collection_index
from crawlkit.crawl.core import Gate, Limits
from crawlkit.crawl.cycle import CycleRunner, CycleWarcs
from crawlkit.crawl.feed import Feed
from crawlkit.crawl.fetchrun import FetchRun
from crawlkit.crawl.files import CrawlDir
from crawlkit.crawl.options import CrawlOptions
from crawlkit.crawl.recovery import Leftover, Recovery
from crawlkit.crawl.retry import ANSWERED, retry_records
from crawlkit.crawl.signals import graceful_signals
from crawlkit.crawl.step_process import StepProcess
from crawlkit.crawl.steps import ExplainContext, render
from crawlkit.crawl.stores import Stores
from crawlkit.crawl.summary import NOTHING_FETCHED, CrawlSummary, save_totals
from crawlkit.diag import NullReporter, Reporter
from crawlkit.frontier.scope import Scope
from crawlkit.robots import agent_token
from crawlkit.shard.routing import inbox_files, role_from_options
from crawlkit.stages.extract import ExtractWorkers
from crawlkit.stages.extract_page import ExtractOptions
from crawlkit.stages.report_collection import record_settings, warcinfo_fields
from crawlkit.state import StateDir, open_state
from crawlkit.times import iso, steady_time
from crawlkit.totals import read_totals
from crawlkit.url import Rules, set_process_rules

__all__ = ["Crawl", "CrawlOptions", "CrawlSummary", "crawl", "explain"]


class Crawl:
    """One run of ``crawlkit crawl`` over a locked state directory: the loop, over
    the collaborators it builds (one object per job, each with the few it uses)."""

    def __init__(
        self,
        state: StateDir,
        options: CrawlOptions,
        *,
        reporter: Reporter,
        progress: Callable[[dict[str, Any]], None] | None = None,
        clock: Callable[[], float] = steady_time,
    ):
        self.state = state
        self.opts = options
        self.rep = reporter
        self.dir = CrawlDir(state)
        self.summary = CrawlSummary()
        request = options.fetch.request
        if request is not None and request.keep_cookies:  # sent again, saved at the end
            request.load(self.dir.cookies, reporter.warn)
        totals = read_totals(self.dir.root)  # killed runs' requests counted too
        self.fetched_before = int(totals.get("fetched", 0))
        requests_before = int(totals.get("requests", totals.get("fetched", 0)))
        self.limits = Limits(options, self.summary, requests_before, clock)
        warc_root = Path(options.warc_dir) if options.warc_dir else state.path / "warc"
        saved = Scope.saved(state.path)
        rules = Rules(saved.rules if saved is not None else options.rules)
        if rules != options.rules:
            reporter.info(
                f"URL rules {rules.value!r} of the running crawl kept (not {options.rules!r})"
            )
        set_process_rules(rules)  # before any URL is read (see crawlkit.url)
        # N extract processes (-j N, one at least) live for the whole run.
        # robots directives in pages are matched to the token robots.txt is matched to
        agent = agent_token(options.fetch.agent) or "crawlkit"
        workers = ExtractWorkers(max(1, options.jobs), ExtractOptions(rules=rules, agent=agent))
        try:
            role = role_from_options(state.path, options.shard, options.shards, options.slot_map)
            link_policy = LinkPolicy(options.archive, reporter)
            if saved is not None and saved.spec != options.scope:
                reporter.info(
                    f"scope {saved.spec!r} of the running crawl kept (not {options.scope!r})"
                )
            scope = Scope.load(state.path, saved.spec if saved is not None else options.scope)
            scope.rules = rules.value
            # The stores are opened once for the run (the state directory is locked by
            # it) and committed by the stage functions after every change.
            self.stores = Stores(state, options, reporter, self.dir.waiting)
        except BaseException:
            workers.close()
            raise
        self.gate = Gate(
            self.stores,
            self.dir,
            scope,
            role,
            self.summary,
            reporter,
            clock,
            max_depth=options.limits.max_depth,
        )
        self.admission = Admission(self.gate, self.stores, self.dir, reporter, clock)
        self.cycles = CycleRunner(
            limits=self.limits,
            stores=self.stores,
            gate=self.gate,
            admission=self.admission,
            warcs=CycleWarcs(
                warc_root,
                self.dir.root,
                reporter,
                options.warc.prefix if options.linger is not None else None,
            ),
            workers=workers,
            step_process=StepProcess(self.stores.dedup_dir, state.sub("recrawl")),
            link_policy=link_policy,
            recrawl=options.recrawl,
            reporter=reporter,
            progress=progress or (lambda info: None),
        )
        self.recovery = Recovery(self.dir, self.cycles, self.summary, reporter)
        self.feed = Feed(
            options=options,
            limits=self.limits,
            stores=self.stores,
            gate=self.gate,
            admission=self.admission,
            cycles=self.cycles,
            link_policy=link_policy,
            dir=self.dir,
            reporter=reporter,
        )

    def close(self) -> None:
        """Stop the extract processes and close the stores (a run that ends or fails)."""
        self.cycles.close()
        self.stores.close()

    def run(self, admit: Callable[[Leftover], None] | None = None) -> CrawlSummary:
        """Recover what the last run left, call ``admit`` with the URLs it hands out
        again (to queue seeds and retries besides them), then crawl until a limit or
        nothing is left."""
        limits = self.limits
        with graceful_signals(limits.on_signal):
            return self._run(admit)

    def _run(self, admit: Callable[[Leftover], None] | None = None) -> CrawlSummary:
        limits = self.limits
        recovered = self.recovery.recover()
        if admit is not None:
            admit(recovered)
        leftover: Leftover | None = recovered
        idle_runs = 0
        while True:
            reason = limits.should_stop()
            if reason:
                self.summary.stopped = reason
                break
            self.gate.release_waiting()
            before = sum(self.summary.outcomes.values())
            FetchRun(self.feed).run(leftover or Leftover())
            leftover = None
            if self.feed.post_error is not None:
                raise self.feed.post_error
            # A stop asked for is the reason, also when the frontier looks empty (the
            # stopped run's cycles may not be post-processed yet).
            reason = limits.should_stop() if limits.interrupted else self._exhausted()
            if reason and self._lingers():
                if self.opts.linger(lambda: bool(limits.should_stop())):  # type: ignore[misc]
                    continue  # a peer worker sent work to the inbox
                reason = limits.should_stop() or reason
            if reason:
                self.summary.stopped = reason
                break
            if sum(self.summary.outcomes.values()) == before:
                # Nothing could be fetched: only deferred URLs wait. Sleep until the
                # first is due (bounded), never spin.
                idle_runs += 1
                wake = self.stores.next_waiting_time()
                if limits.nothing_due_in_time(wake):
                    # Free the slice (a job runner's allocation) instead of sleeping
                    # it away: the next run fetches the deferred URLs when they are due.
                    self.summary.stopped = "nothing due before the time limit (--for)"
                    break
                if self._failed_so_far():
                    # Not one answer over HTTP in any run, and failures (a seed's host
                    # down): say so now rather than sleep until the retry time.
                    self.summary.stopped = NOTHING_FETCHED
                    break
                if limits.waits_too_long(wake):
                    # A one-off run (crawlkit archive) ends instead of sleeping an hour
                    # on one host's backoff; the summary says when the next is due.
                    self.summary.stopped = "nothing due within --max-wait"
                    break
                if wake is None and idle_runs >= 3:
                    self.summary.stopped = "nothing more can be fetched now"
                    break
                limits.sleep_until(wake or limits.clock() + self.opts.idle_wait)
            else:
                idle_runs = 0
        stats = self.stores.frontier_stats()
        self.summary.parked = int(stats.get("parked", 0) or 0)
        self.summary.queued = int(stats.get("queued", 0) or 0) + self.summary.parked
        self.summary.waiting = len(self.stores.waiting)
        wake = self.stores.next_waiting_time()
        self.summary.next_retry_at = iso(wake) if wake is not None else None
        self.summary.elapsed_s = limits.clock() - limits.start
        if self.opts.archive.index and self.opts.archive.merge_index:
            update_collection_index(self.cycles.warcs.root, self.rep)
        if self.opts.fetch.request is not None and self.opts.fetch.request.keep_cookies:
            self.opts.fetch.request.save(self.dir.cookies)  # cookies sites set
        self._save_totals()
        return self.summary

    def _lingers(self) -> bool:
        """Whether this run, with nothing left, waits for its peers' links or their end
        (a worker of ``crawl --workers``, see ``CrawlOptions.linger``) instead of ending."""
        return (
            self.opts.linger is not None
            and self.gate.role is not None
            and not (self.limits.interrupted)
        )

    def _failed_so_far(self) -> bool:
        """No URL answered over HTTP in this run or any before, and some failed."""
        answered = any(self.summary.outcomes[o] for o in ANSWERED)
        return not (self.fetched_before or answered) and bool(self.summary.errors.counts)

    def _exhausted(self) -> str:
        stats = self.stores.frontier_stats()
        if int(stats.get("queued", 0) or 0) or len(self.stores.waiting) or self.dir.batch_files():
            return ""
        if self.gate.role is not None and inbox_files(self.state.path):
            return ""
        parked = int(stats.get("parked", 0) or 0)
        if parked:
            return f"done for this budget period ({parked} URLs of over-budget sites parked)"
        return "frontier empty"

    def _save_totals(self) -> None:
        save_totals(self.dir.totals, self.summary, self.fetched_before, self.gate.journal)
        self.gate.journal.close()


def crawl(
    state_path: str | os.PathLike[str],
    seeds: Iterable[str],
    options: CrawlOptions,
    *,
    reporter: Reporter | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
    peer_seeds: Sequence[str] = (),
) -> CrawlSummary:
    """Run (or resume) a crawl in ``state_path`` until the frontier is empty or a limit.

    ``peer_seeds`` (a worker of ``crawl --workers``): the seeds the other workers own;
    they widen the scope and their sites are trusted, but only ``seeds`` are queued
    and rechecked here (N workers would otherwise each canonicalize, look up and
    recheck every seed). Raises :class:`LockedError` when another process owns the
    state directory.
    """
    reporter = reporter or NullReporter()
    seeds = list(seeds)
    with open_state(state_path, owner="crawl") as state:
        record_settings(state.path, seeds, options)  # for the collection's report
        options = dataclasses.replace(options, warc_info=warcinfo_fields(options))
        run = Crawl(state, options, reporter=reporter, progress=progress)

        gate, admission = run.gate, run.admission

        def admit(leftover: Leftover) -> None:
            admission.requeue_admitted()  # what a crash left between seen set and frontier
            # seeds seen before but never fetched, and due retries; asked after the
            # recovery has put the cycles a crash left into the recrawl history, else a
            # seed fetched in one of them reads as never fetched and is queued again
            owns = gate.role.owns if gate.role is not None else None
            # a seed the killed run had handed out goes again with the leftover: queued
            # besides, it was a second copy, fetched twice when a --max-pages share
            # sent it after the first was answered
            in_hand = {str(r.get("url")) for r in leftover.records}
            retry = retry_records(
                state.path,
                seeds,
                gate.canon,
                owns=owns,
                seen=run.stores.seen,
                history=run.stores.history,
                queued=lambda urls: (
                    run.stores.frontier.queued_among(urls, "seed") | (urls & in_hand)
                ),
            )
            gate.queue(retry, run.dir.root / "retry-refused.ndjson.zst")
            admission.add_seeds(seeds)
            admission.recheck_seeds(seeds)  # queued: due now, robots.txt asked again first
            admission.trust_seed_sites(peer_seeds)

        try:
            admission.widen_scope([*seeds, *peer_seeds])
            return run.run(admit)
        finally:
            run.close()


def explain(
    state: str,
    options: CrawlOptions,
    flags: Mapping[str, str] | None = None,
    seeds: Sequence[str] = (),
) -> str:
    """The equivalent pipeline of stage commands (``--explain``): the seeds' admission,
    then one cycle, rendered from the same list of steps the crawl runs
    (:data:`crawlkit.crawl.steps.STEPS`).

    ``flags`` holds, per stage (``fetch_flags``, ``seen_flags``, ``add_flags``,
    ``next_flags``), the flags of the other options crawl was given; the CLI reads
    them off its own options (``crawlkit_cli.explain``).
    """
    return render(
        ExplainContext(
            state=state,
            warc=str(options.warc_dir or f"{state}/warc"),
            batch=options.batch_size,
            per_host=options.per_host,
            budgets=options.budgets,
            jobs=options.jobs,
            scope=shlex.quote(options.scope),
            rules=options.rules,
            shard=_shard_flags(options),
            seeds=_seed_source(seeds),
            **dict(flags or {}),
        )
    )


def _seed_source(seeds: Sequence[str]) -> str:
    """A shell command that prints the seeds one a line: URLs as given, seed files'
    lines without comments (as crawl reads them); empty without seeds."""
    urls = [shlex.quote(s) for s in seeds if "://" in s]
    files = [shlex.quote(s) for s in seeds if "://" not in s]
    parts = []
    if urls:
        parts.append("printf '%s\\n' " + " ".join(urls))
    if files:
        parts.append("sed -e 's/#.*//' " + " ".join(files))
    if len(parts) < 2:
        return "".join(parts)
    return "{ " + "; ".join(parts) + "; }"


def _shard_flags(options: CrawlOptions) -> str:
    """The options that make the stages act as the crawl's shard of a fleet."""
    if options.shard is None:
        return ""
    if options.slot_map is not None:
        return f" --shard {options.shard} --slot-map {shlex.quote(str(options.slot_map))}"
    if options.shards is not None:
        return f" --shard {options.shard} --shards {options.shards}"
    return f" --shard {options.shard}"  # the map the state directory keeps
