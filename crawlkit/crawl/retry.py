"""What a crawl retries, and what it tells about the URLs it could not fetch.

A URL that failed (a network error, a refusal) is already in the seen set, so links and
seeds naming it again are dropped as known. Without help it would wait for the recrawl
history's backoff, which a new run never looks at while its frontier is empty: a seed
that failed once (wrong ``--hosts-file``, a server down) was never tried again, and the
rerun with the right options said "frontier empty". :func:`retry_records` gives a run,
at its start:

* every seed it names that has never been fetched (no answer over HTTP in the recrawl
  history: it failed, was refused or deferred, or was never tried), whatever its
  backoff, since the operator asked for it again; and
* every other URL whose backoff has run out in the recrawl history (errors back off
  1 h, doubling each time; ``crawlkit recrawl``), so failed URLs are retried.

A seed still queued from an interrupted run may so be queued twice; the fetcher answers
the second copy in a batch as a duplicate, and at worst fetches it twice.

:class:`ErrorTally` keeps the reasons of a run's failed fetches, each with one example
URL, for the summary; :func:`fetched_nothing` decides when a crawl failed as a whole.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crawlkit import streams
from crawlkit.errors import InvalidURL
from crawlkit.frontier.waiting import WAITING, read_waiting
from crawlkit.records import refusal_detail, url_record
from crawlkit.recrawl import History
from crawlkit.seen.store import SUBDIR as SEEN_SUBDIR
from crawlkit.seen.store import SeenStore
from crawlkit.stages.recrawl import recrawl, recrawl_in
from crawlkit.streams import Record
from crawlkit.url import Canonicalizer, trim_url

__all__ = ["ErrorTally", "fetched_nothing", "never_fetched", "retry_records"]

# Outcomes that mean the server answered over HTTP.
ANSWERED = ("fetched", "not-modified", "redirect")
# How a fetch record deferred for want of robots.txt starts its error (robotsflow).
ROBOTS_UNAVAILABLE = "robots.txt unavailable"


def retry_records(
    state_path: str | os.PathLike[str],
    seeds: Iterable[str],
    canon: Canonicalizer,
    *,
    owns: Callable[[str], bool] | None = None,
    now: float | None = None,
    seen: SeenStore | None = None,
    history: History | None = None,
    queued: Callable[[set[str]], set[str]] | None = None,
) -> list[Record]:
    """The URL records a run should queue again at its start (see the module doc), each
    once: the ``seeds`` already seen but never fetched, less those ``queued`` says are
    still queued (a run stopped before it handed them out: queued twice, the second
    copy came out "refused: duplicate", so the next run's summary called every seed
    refused), then the URLs the recrawl history says are due, less those in the
    waiting room (it queues them itself).
    Seeds never seen are left to the seen set (``Crawl.add_seeds``): call this first.
    ``owns(site)`` keeps a shard to its own sites. ``seen`` and ``history`` are the
    opened seen set and recrawl history of the state (``crawlkit crawl`` passes its
    own); without them they are opened by path for the call, under the state lock.
    """
    state = Path(state_path)
    now = time.time() if now is None else now
    records: dict[str, Record] = {}
    for raw in seeds:
        try:
            parsed = canon.parse(trim_url(raw))
        except InvalidURL:
            continue  # add_seeds reports it
        if owns is None or owns(parsed.site):
            records[parsed.url] = dict(url_record(parsed, depth=0, priority=1.0, reason="seed"))
    out = _never_fetched(state, _seen(state, list(records.values()), seen), history)
    if out and queued is not None:
        still = queued({str(r["url"]) for r in out})
        out = [r for r in out if str(r["url"]) not in still]
    due: list[Record] = []
    if history is not None:
        recrawl_in(history, [], write=due.extend, now=now)
    else:
        recrawl(state_path, [], write=due.extend, now=now)
    skip = {str(r["url"]) for r in out}
    skip.update(str(r.get("url")) for r in read_waiting(state / WAITING))
    out += [
        r
        for r in due
        if str(r.get("url")) not in skip and (owns is None or owns(str(r.get("site") or "")))
    ]
    return out


def never_fetched(
    state_path: str | os.PathLike[str],
    seeds: Iterable[str],
    canon: Canonicalizer,
    history: History | None = None,
) -> list[Record]:
    """The URL records of ``seeds`` with no answer over HTTP in the recrawl history
    (never tried, failed, refused or deferred), each once; bad URLs are left out."""
    records: dict[str, Record] = {}
    for raw in seeds:
        try:
            parsed = canon.parse(trim_url(raw))
        except InvalidURL:
            continue
        records[parsed.url] = dict(url_record(parsed, depth=0, priority=1.0, reason="seed"))
    return _never_fetched(Path(state_path), list(records.values()), history)


def _seen(state: Path, records: list[Record], store: SeenStore | None) -> list[Record]:
    """The records the seen set of ``state`` (opened as ``store``, if given) holds."""
    if not records:
        return []
    fps = np.array([int(str(r["fp"]), 16) for r in records], np.uint64)
    if store is not None:
        known = store.contains(fps)
    elif not (state / SEEN_SUBDIR).exists():
        return []
    else:
        with SeenStore.open(state, writable=False) as opened:
            known = opened.contains(fps)
    return [r for r, seen in zip(records, known, strict=True) if seen]


def _never_fetched(state: Path, seeds: list[Record], opened: History | None) -> list[Record]:
    """The seeds with no answer over HTTP in the recrawl history (``opened``, if given)."""
    directory = state / "recrawl"
    if not seeds or (opened is None and not directory.exists()):
        return list(seeds)
    history = opened or History(directory)
    try:
        return [
            seed
            for seed in seeds
            if (entry := history.get(int(str(seed["fp"]), 16))) is None or entry.last_fetch is None
        ]
    finally:
        if opened is None:
            history.close()


def short_label(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut at a word boundary with "…" when longer than
    ``limit`` (never mid-word, as "allow it with --allow-ne" was)."""
    words = " ".join(text.split())
    if len(words) <= limit:
        return words
    cut = words[: limit - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;(") + "…"


@dataclass
class ErrorTally:
    """Failed fetches of a run by reason (the record's ``error_code``, such as
    ``dns-nxdomain`` or ``tls-expired``, else the error's first words), with an example:
    errors below HTTP, URLs the fetcher refused (network policy...) except repeats of
    a URL already in flight, URLs deferred because their robots.txt could not be had
    (``robots.txt unavailable``), and redirects that lead nowhere (``redirect limit
    reached``: past ``--max-hops``)."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)

    def note(self, record: Mapping[str, Any]) -> None:
        """Count ``record`` (a fetch record) if it failed: an error, a refusal, or a
        deferral because robots.txt could not be had (the host is down or failing;
        a deferral by a backoff or by the run's end is no failure)."""
        outcome = record.get("outcome")
        text = refusal_detail(record) or "unknown error"
        code = record.get("error_code") or (record.get("refused") if outcome == "refused" else None)
        if outcome == "deferred" and text.startswith(ROBOTS_UNAVAILABLE):
            reason = f"{ROBOTS_UNAVAILABLE} ({code})" if code else ROBOTS_UNAVAILABLE
            self._add(reason, record, text)
            return
        if outcome == "redirect" and record.get("error"):
            # a redirect that leads nowhere (past the hop limit, to no URL): its page is
            # lost to the crawl as surely as by an error
            self._add(short_label(text.split(":", 1)[0].split(" (", 1)[0]), record, text)
            return
        if outcome not in ("error", "refused") or record.get("refused") == "duplicate":
            return
        reason = str(code) if code else short_label(text.split(":", 1)[0]) or "unknown error"
        if outcome == "refused":
            reason = f"refused ({reason})"  # the example says why in full
        self._add(reason, record, text)

    def _add(self, reason: str, record: Mapping[str, Any], text: str) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        self.examples.setdefault(reason, f"{record.get('url')} ({text[:200]})")

    def to_json(self) -> dict[str, Any]:
        return {
            reason: {"count": n, "example": self.examples[reason]}
            for reason, n in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        }


def fetched_nothing(state_path: str | os.PathLike[str], summary: dict[str, Any]) -> bool:
    """True when a crawl failed as a whole: this run's fetches failed (errors,
    refusals, robots.txt unavailable) or it could fetch nothing more, no URL was
    answered over HTTP, and no earlier run in ``state_path`` fetched a page either.
    A run stopped by a signal, one whose URLs were only deferred by its time limit,
    and a shard with nothing of its own to fetch have not failed."""
    outcomes: dict[str, int] = summary.get("outcomes") or {}
    stopped = str(summary.get("stopped", ""))
    if stopped.startswith("interrupted") or any(outcomes.get(o) for o in ANSWERED):
        return False
    if not summary.get("errors") and stopped != "nothing more can be fetched now":
        return False
    totals_path = Path(state_path) / "crawl" / "totals.json"
    totals = streams.read_json(totals_path) if totals_path.exists() else {}
    return not int(totals.get("fetched", 0) or 0)
