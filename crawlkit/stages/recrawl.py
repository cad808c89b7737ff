"""``crawlkit recrawl``: fetch log + page records in, due URL records out.

Reads fetch records (an ``outcome``: fetched, not-modified, redirect, deferred,
error, ...), page or dedup records (``digest``, ``simhash``) and sitemap URL records
(``lastmod``), updates each URL's history and change-rate estimate
(:mod:`crawlkit.recrawl`), solves the budget's revisit intervals over the whole
history (:mod:`crawlkit.recrawl.plan`) and writes a URL record (``reason:
"recrawl"``) for every URL picked, the one a fetch buys the most freshness for
first, carrying ``etag`` and ``last_modified`` for a conditional GET.

Buffers: the input's events, one small object per record, until the input ends
(a page record must meet its fetch record, and the two come from different files);
then it takes the state lock, so it can read from a pipe of another stage on the
same state directory. History lives on disk (SQLite); each run reads the planning
columns of every tracked URL into arrays (about 100 bytes a URL) to solve the budget.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InvalidURL
from crawlkit.records import importance_of, recrawl_record
from crawlkit.recrawl import Entry, Event, History, RecrawlPolicy, apply_event
from crawlkit.recrawl.estimate import PRIOR_SPREAD
from crawlkit.recrawl.history import estimate_entries
from crawlkit.recrawl.plan import pick, replan
from crawlkit.recrawl.stats import RecrawlStats, collect, format_lines, merge
from crawlkit.stages.frontier import lock_state
from crawlkit.state import crawl_roots, refuse_workers_state, require_existing_state, workers_of
from crawlkit.streams import Record
from crawlkit.times import iso, parse_time, time_problem
from crawlkit.url import Canonicalizer

__all__ = ["RecrawlSummary", "collect_events", "recrawl", "recrawl_in", "recrawl_stats"]


@dataclass
class RecrawlSummary:
    fetches: int = 0
    pages: int = 0
    lastmods: int = 0
    ignored: int = 0
    updated: int = 0
    emitted: int = 0
    tracked: int = 0


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _simhash(value: object) -> int | None:
    if isinstance(value, str):
        try:
            return int(value, 16)
        except ValueError:
            return None
    return _int(value)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _is_fetch(rec: Record) -> bool:
    """A fetch record (it has an outcome; a record of another tool may have only a
    status and a time), not extract's page record, which has a status and the fetch's
    time too, and its simhash and links: read as a second fetch of the page a moment
    later, it made every page's first visit two checks and its outcome none."""
    if "outcome" in rec:
        return True
    is_page = "simhash" in rec or "links" in rec
    return not is_page and "status" in rec and "fetched_at" in rec


def _fetch_outcome(rec: Record) -> str | None:
    """The outcome the history learns: a body the server broke off or that outlasted
    the timeout (``truncated``: disconnect, time) is an error to retry after the
    backoff, not an observation (its digest differs from the page's: a false change);
    one cut at a size cap is the page as the crawl keeps it."""
    if rec.get("truncated") in ("disconnect", "time"):
        return "error"
    return _str(rec.get("outcome"))


def collect_events(
    records: Iterable[tuple[str, int, Record]],
    *,
    now: float,
    reporter: Reporter,
    summary: RecrawlSummary,
) -> tuple[dict[int, list[Event]], dict[int, tuple[str | None, str | None]]]:
    """Group the input into events per URL fingerprint, pages joined to their fetch.

    Returns the events (in input order per URL) and each URL's host and site if a
    record carried them.
    """
    canon: Canonicalizer | None = None
    events: dict[int, list[Event]] = {}
    where: dict[int, tuple[str | None, str | None]] = {}
    pages: dict[int, tuple[str | None, int | None]] = {}
    for source, line, rec in records:
        url = rec.get("url")
        if not isinstance(url, str) or not url:
            reporter.bad_record(source, line, "record without a url")
            continue
        fp_hex = rec.get("fp")
        try:
            fp = int(fp_hex, 16) if isinstance(fp_hex, str) and len(fp_hex) == 16 else None
        except ValueError:
            fp = None
        host, site = _str(rec.get("host")), _str(rec.get("site"))
        if fp is None or host is None or site is None:
            canon = canon or Canonicalizer()
            try:
                parsed = canon.parse(url)
            except InvalidURL as exc:
                reporter.bad_record(source, line, str(exc))
                continue
            url, host, site = parsed.url, parsed.host, parsed.site
            fp = fp if fp is not None else int(parsed.fp, 16)
        where[fp] = (host, site)
        if _is_fetch(rec):
            problem = time_problem(rec, "fetched_at") or time_problem(rec, "retry_at")
            if problem is not None:
                reporter.bad_record(source, line, problem)
                continue
            if rec.get("outcome") == "deferred":
                # It waits in the waiting room alone (frontier add --deferred), as in
                # crawl's recrawl step: learned here too, it became due a second time,
                # as a recrawl, and the pipeline fetched it twice.
                summary.ignored += 1
                continue
            at = parse_time(rec.get("fetched_at"))
            event = Event(
                kind="fetch",
                at=at if at is not None else now,
                url=url,
                outcome=_fetch_outcome(rec),
                status=_int(rec.get("status")),
                etag=_str(rec.get("etag")),
                last_modified=_str(rec.get("last_modified")),
                digest=_str(rec.get("digest")),
                simhash=_simhash(rec.get("simhash")),
                retry_at=parse_time(rec.get("retry_at")),
                # "importance" is what this stage said the page was worth; else the
                # frontier's queue level (records.importance_of).
                importance=importance_of(rec),
                depth=_int(rec.get("depth")),
                extra={"location": rec.get("location")} if rec.get("location") else {},
            )
            events.setdefault(fp, []).append(event)
            summary.fetches += 1
        elif "simhash" in rec or "digest" in rec:
            pages[fp] = (_str(rec.get("digest")), _simhash(rec.get("simhash")))
            summary.pages += 1
        elif rec.get("lastmod") is not None:
            lastmod = parse_time(rec.get("lastmod"))
            if lastmod is None:
                reporter.bad_record(source, line, time_problem(rec, "lastmod") or "no lastmod")
                continue
            events.setdefault(fp, []).append(
                Event(kind="lastmod", at=now, url=url, lastmod=lastmod)
            )
            summary.lastmods += 1
        else:
            summary.ignored += 1
    for fp, (digest, simhash) in pages.items():
        fetches = [e for e in events.get(fp, []) if e.kind == "fetch" and e.outcome != "deferred"]
        if fetches:
            latest = max(fetches, key=lambda e: e.at)
            latest.digest = latest.digest or digest
            if latest.simhash is None:
                latest.simhash = simhash
    return events, where


def recrawl(
    state_path: str | os.PathLike[str],
    records: Iterable[tuple[str, int, Record]],
    *,
    write: Callable[[list[Record]], None],
    policy: RecrawlPolicy | None = None,
    now: float | None = None,
    max_urls: int | None = None,
    host_max: int | None = None,
    lock_wait: float = 3600.0,
    reporter: Reporter | None = None,
    hold_mu: float = 0.0,
) -> RecrawlSummary:
    """:func:`recrawl_in` on the history under ``state_path``: the input is read to its
    end first, then the state directory is locked and the history opened for the call."""
    refuse_workers_state(
        state_path,
        "recrawl histories",
        f"its crawl plans them ('crawlkit recrawl --stats --state {state_path}' sums them)",
    )
    reporter = reporter or NullReporter()
    now = time.time() if now is None else now
    summary = RecrawlSummary()
    events, where = collect_events(records, now=now, reporter=reporter, summary=summary)
    with lock_state(state_path, wait=lock_wait, reporter=reporter) as state:
        history = History(state.sub("recrawl"))
        try:
            _update(
                history,
                events,
                where,
                summary,
                write=write,
                policy=policy or RecrawlPolicy(),
                now=now,
                max_urls=max_urls,
                host_max=host_max,
                hold_mu=hold_mu,
            )
        finally:
            history.close()
    return summary


def recrawl_stats(
    state_path: str | os.PathLike[str],
    policy: RecrawlPolicy | None = None,
    *,
    now: float | None = None,
    days: int = 7,
    lock_wait: float = 3600.0,
    reporter: Reporter | None = None,
) -> list[str]:
    """The text of ``crawlkit recrawl --stats``: the history under ``state_path`` read
    under the state lock (:func:`crawlkit.recrawl.stats.collect`) as planned for
    ``policy`` now; writes nothing but a migration of an old history (the plan is
    rolled back). A crawl of ``--workers N`` has one history a worker: their figures
    are summed (:func:`crawlkit.recrawl.stats.merge`)."""
    require_existing_state(state_path)  # reading makes nothing (a mistyped --state)
    now = time.time() if now is None else now
    policy = policy or RecrawlPolicy()
    roots = crawl_roots(Path(state_path))[1:] if workers_of(Path(state_path)) else [state_path]
    parts = [_stats(root, policy, now, days, lock_wait, reporter) for root in roots]
    return format_lines(merge(parts))


def _stats(
    state_path: str | os.PathLike[str],
    policy: RecrawlPolicy,
    now: float,
    days: int,
    lock_wait: float,
    reporter: Reporter | None,
) -> RecrawlStats:
    with lock_state(state_path, wait=lock_wait, reporter=reporter or NullReporter()) as state:
        history = History(state.sub("recrawl"))
        try:
            replan(history, policy)
            return collect(history, policy, now, days)
        finally:
            history.rollback()
            history.close()


def recrawl_in(
    history: History,
    records: Iterable[tuple[str, int, Record]],
    *,
    write: Callable[[list[Record]], None],
    policy: RecrawlPolicy | None = None,
    now: float | None = None,
    max_urls: int | None = None,
    host_max: int | None = None,
    reporter: Reporter | None = None,
    hold_mu: float = 0.0,
) -> RecrawlSummary:
    """Update the opened ``history`` and ``write`` the URLs due at ``now``.

    ``write`` gets the due URL records; the history (updates and "emitted" marks)
    is committed only after it returns, so a crash re-emits rather than loses.
    ``hold_mu`` > 0 keeps the budget's μ up to that many seconds between solves
    (:func:`crawlkit.recrawl.plan.replan`; a caller that runs every few seconds).
    """
    now = time.time() if now is None else now
    summary = RecrawlSummary()
    events, where = collect_events(
        records, now=now, reporter=reporter or NullReporter(), summary=summary
    )
    _update(
        history,
        events,
        where,
        summary,
        write=write,
        policy=policy or RecrawlPolicy(),
        now=now,
        max_urls=max_urls,
        host_max=host_max,
        hold_mu=hold_mu,
    )
    return summary


def _site_of(
    fp: int, where: dict[int, tuple[str | None, str | None]], known: dict[int, Entry]
) -> str:
    """The site a URL's prior is looked up by: its records', else its entry's."""
    entry = known.get(fp)
    return where.get(fp, (None, None))[1] or (entry.site if entry else None) or ""


def _update(
    history: History,
    events: dict[int, list[Event]],
    where: dict[int, tuple[str | None, str | None]],
    summary: RecrawlSummary,
    *,
    write: Callable[[list[Record]], None],
    policy: RecrawlPolicy,
    now: float,
    max_urls: int | None,
    host_max: int | None = None,
    hold_mu: float = 0.0,
) -> None:
    crawl_prior = history.meta("prior")  # for sites with no estimate yet
    spread = history.meta("spread") or PRIOR_SPREAD
    policy = replace(
        policy, mu=history.meta("mu") or 0.0, prior_weight=(PRIOR_SPREAD / spread) ** 2
    )
    known = {entry.fp: entry for entry in history.entries(list(events))}
    priors = history.site_rates(_site_of(fp, where, known) for fp in events)
    changed = []
    changed_priors: list[float | None] = []
    for fp, evs in events.items():
        entry = known.get(fp)
        before = entry
        host, site = where.get(fp, (None, None))
        prior = priors.get(_site_of(fp, where, known), crawl_prior)
        for event in sorted(evs, key=lambda e: e.at):
            entry = apply_event(entry, event, fp, policy, prior=prior, estimate_now=False)
        if entry is not None and entry is not before:
            entry.host = host or entry.host
            entry.site = site or entry.site
            changed.append(entry)
            changed_priors.append(prior)
    estimate_entries(changed, changed_priors, policy)  # one batch, not one per event
    history.put(changed)
    summary.updated = len(changed)
    plan = replan(history, policy, now=now, hold=hold_mu, updated=len(changed))
    rows = pick(plan, policy, now, max_urls=max_urls, host_max=host_max)
    chosen = [int(fp) for fp in plan.table.fp[rows]]
    entries = {entry.fp: entry for entry in history.entries(chosen)}
    out: list[Record] = []
    for fp in chosen:
        entry = entries[fp]
        due = recrawl_record(
            url=entry.url,
            host=entry.host,
            site=entry.site,
            fp=f"{entry.fp:016x}",
            depth=entry.depth if entry.depth is not None else 0,
            importance=entry.importance,
            # picked now (--max-urls picks "due or not"): due now, else frontier add
            # held a pick made ahead of its time in the waiting room, and next gave none
            due=iso(min(entry.due, now)),
            interval=round(entry.interval, 3),
            etag=entry.etag,
            last_modified=entry.last_modified,
            digest=entry.digest,
            last_fetch=iso(entry.last_fetch) if entry.last_fetch else None,
            changes=entry.changes,
            checks=entry.checks,
        )
        out.append(dict(due))
    write(out)
    history.mark_emitted(chosen, now)
    history.commit()
    summary.emitted = len(out)
    summary.tracked = len(plan.table.fp)
