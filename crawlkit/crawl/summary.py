"""What a crawl run reports: its summary (``--json``), progress, and the totals of all runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawlkit import streams
from crawlkit.crawl.retry import ErrorTally
from crawlkit.totals import RequestJournal, count_journals, forget_journals

LIMIT = "page limit (--max-pages)"  # the reason a run stops on --max-pages
# the reason a run stops when no URL of any run got an answer and some failed
NOTHING_FETCHED = "nothing could be fetched; deferred URLs wait"

__all__ = [
    "LIMIT",
    "CrawlSummary",
    "merge_summaries",
    "progress_info",
    "save_totals",
    "summary_text",
]


@dataclass
class CrawlSummary:
    """What a run did (``--json`` prints it); ``outcomes`` counts fetch records."""

    cycles: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    pages: int = 0
    links: int = 0
    capped_pages: int = 0  # page records with "capped" (depth, attributes, time, ...)
    page_errors: int = 0  # page records with "error" (a parse step raised, a worker died)
    new_urls: int = 0  # new URLs of the run's own links (post-processing adds them)
    # New URLs of links other shards delivered (the fetch side's refill adds them): a
    # field of its own, because ``x += f()`` reads x before f runs, and the post
    # thread adding to ``new_urls`` meanwhile was lost (2 workers counted 103 of 145).
    inbox_new_urls: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    dedup: Counter[str] = field(default_factory=Counter)
    refetched: int = 0  # URLs the fetcher held unanswered at a stop, handed out again
    requests: int = 0  # page requests made (fetch records with fetched_at), answered or not
    unstarted: int = 0  # deferred because the run ended before their host was due
    waiting: int = 0
    next_retry_at: str | None = None  # when the first waiting URL is due (UTC ISO)
    queued: int = 0  # queued or parked in the frontier at the end
    parked: int = 0  # of those, parked over their site's budget until the next period
    stopped: str = ""
    routed: int = 0  # URLs written to other shards' outboxes
    elapsed_s: float = 0.0
    warc_files: int = 0
    seen: Counter[str] = field(default_factory=Counter)  # seen-merge counters, summed
    errors: ErrorTally = field(default_factory=ErrorTally)  # failed fetches by reason

    def all_new_urls(self) -> int:
        """URLs this run queued for the first time: from its links and its inbox."""
        return self.new_urls + self.inbox_new_urls

    def to_json(self) -> dict[str, Any]:
        return {
            "cycles": self.cycles,
            "outcomes": dict(self.outcomes),
            "fetched": self.outcomes["fetched"],
            "pages": self.pages,
            "links": self.links,
            "capped_pages": self.capped_pages,
            "page_errors": self.page_errors,
            "new_urls": self.all_new_urls(),
            "refused": dict(self.refused),
            "dedup": dict(self.dedup),
            "refetched": self.refetched,
            "requests": self.requests,
            "unstarted": self.unstarted,
            "routed_to_other_shards": self.routed,
            "waiting": self.waiting,
            "next_retry_at": self.next_retry_at,
            "queued": self.queued,
            "parked": self.parked,
            "stopped": self.stopped,
            "elapsed_s": round(self.elapsed_s, 3),
            "warc_files": self.warc_files,
            "seen": dict(self.seen),
            "errors": self.errors.to_json(),
        }


def progress_info(summary: CrawlSummary, cycle: str, elapsed: float) -> dict[str, Any]:
    """What the progress callback is told after each finished cycle: the progress
    line's figures, and under ``"summary"`` the run's summary so far (a worker's
    parent reports it for a worker that dies before its own summary)."""
    elapsed = max(elapsed, 1e-9)
    return {
        "cycle": cycle,
        "fetched": summary.outcomes["fetched"],
        "pages_per_s": summary.outcomes["fetched"] / elapsed,
        "errors": summary.outcomes["error"],
        "deferred": summary.outcomes["deferred"],
        "new_urls": summary.all_new_urls(),
        "requests": summary.requests,
        "elapsed_s": elapsed,
        "summary": summary.to_json(),
    }


def save_totals(
    path: Path, summary: CrawlSummary, fetched_before: int, journal: RequestJournal | None = None
) -> None:
    """Add a finished run to the totals of all runs (``STATE/crawl/totals.json``), and
    the requests of runs killed before (their journals: :mod:`crawlkit.crawl.journal`)."""
    totals: dict[str, Any] = streams.read_json(path) if path.exists() else {}
    # --max-pages counts requests over all runs (Crawl reads "requests", else "fetched")
    requests_before = int(totals.get("requests", totals.get("fetched", 0)) or 0)
    killed = count_journals(path.parent, totals, journal)
    totals["requests"] = requests_before + killed + summary.requests
    totals["fetched"] = fetched_before + summary.outcomes["fetched"]
    totals["runs"] = int(totals.get("runs", 0)) + 1
    totals["refetched"] = int(totals.get("refetched", 0)) + summary.refetched
    seen = Counter(totals.get("seen", {}))
    seen.update(summary.seen)
    totals["seen"] = dict(seen)
    totals["last_run"] = summary.to_json()
    streams.atomic_write_json(path, totals)
    forget_journals(path.parent, totals)


def _error_lines(errors: dict[str, Any]) -> list[str]:
    """One line per reason of the failed fetches, with an example URL."""
    return [f"  errors: {reason} {e['count']}, e.g. {e['example']}" for reason, e in errors.items()]


def summary_text(summary: dict[str, Any]) -> str:
    """The summary ``crawlkit crawl`` prints on stderr (``summary`` is
    :meth:`CrawlSummary.to_json`). What a run left unfetched on purpose (URLs parked
    over a site's budget) gets a line of its own, never only a word in the first."""
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(summary["outcomes"].items())) or "none"
    refused = ", ".join(f"{k} {v}" for k, v in sorted(summary["refused"].items()))
    dedup = summary["dedup"]
    parked = int(summary.get("parked") or 0)
    lines = [
        f"crawl stopped: {summary['stopped']} after {summary['elapsed_s']:.1f} s, "
        f"{summary['cycles']} cycles",
        f"  fetch outcomes: {outcomes}",
        f"  pages parsed {summary['pages']} ({summary['capped_pages']} capped, "
        f"{summary['page_errors']} page errors), links {summary['links']}, "
        f"new URLs {summary['new_urls']}",
        f"  duplicates: exact {dedup.get('exact', 0)}, near {dedup.get('near', 0)}",
    ]
    if refused:
        lines.append(f"  not queued (scope, patterns, trap limits, ...): {refused}")
    lines += _error_lines(summary.get("errors") or {})
    # Not started before the stop is no share of "waiting": the URLs of a cycle that
    # post-processing did not reach before the stop join the waiting room next run.
    lines.append(
        f"  still queued {int(summary['queued']) - parked}, waiting (deferred) "
        f"{summary['waiting']}, not started before the stop {summary['unstarted']}, "
        f"handed out again after a stop {summary['refetched']}"
    )
    if summary["waiting"] and summary.get("next_retry_at"):
        lines.append(
            f"  the first waiting URL is due at {summary['next_retry_at']}: run the crawl "
            "again after that to fetch what waits"
        )
    if parked:
        lines.append(
            f"  NOT FETCHED: {parked} URLs (pages and page requisites) of sites over their "
            "page budget are parked until the next budget period; to archive whole sites "
            "use 'crawlkit archive' or --no-budgets"
        )
    return "\n".join(lines)


# -- one summary of a crawl of workers (crawl --workers N) -------------------------------
_SUMMED_DICTS = ("outcomes", "refused", "dedup", "seen")


def merge_summaries(
    parts: Sequence[dict[str, Any]],
    *,
    elapsed: float,
    stopped: str = "",
    last: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One summary (``CrawlSummary.to_json`` shape) of the workers' runs: counts
    summed, errors by reason summed with the first example, the earliest retry; the
    reason to stop is the parent's own, else the workers' (one reason, or each
    worker's with its number) of each worker's ``last`` run (default: ``parts``).
    Figures of the crawl's state at the end (queued, parked, waiting) are the last
    runs' too: a worker started again reports them twice otherwise."""
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if key in _SUMMED_DICTS:
                acc = Counter(out.get(key) or {})
                acc.update(value or {})
                out[key] = dict(acc)
            elif key == "errors":
                errors = out.setdefault("errors", {})
                for reason, e in (value or {}).items():
                    have = errors.setdefault(reason, {"count": 0, "example": e.get("example")})
                    have["count"] += int(e.get("count", 0))
            elif key == "next_retry_at":
                if value and (not out.get(key) or value < out[key]):
                    out[key] = value
                else:
                    out.setdefault(key, None)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = out.get(key, 0) + value
            else:
                out.setdefault(key, value)
    for key in _SUMMED_DICTS:
        out.setdefault(key, {})
    out.setdefault("errors", {})
    out.setdefault("next_retry_at", None)
    for key in ("cycles", "fetched", "pages", "links", "capped_pages", "page_errors"):
        out.setdefault(key, 0)
    for key in ("new_urls", "refetched", "requests", "unstarted", "routed_to_other_shards"):
        out.setdefault(key, 0)
    for key in ("waiting", "queued", "parked", "warc_files"):
        out.setdefault(key, 0)
    finals = parts if last is None else last
    for key in ("waiting", "queued", "parked"):
        out[key] = sum(int(p.get(key) or 0) for p in finals)
    out["fetched"] = int(out["outcomes"].get("fetched", 0))
    out["elapsed_s"] = round(elapsed, 3)
    out["stopped"] = stopped or _stopped(finals, int(out["parked"]))
    return out


def _stopped(parts: Sequence[dict[str, Any]], parked: int) -> str:
    reasons = [str(p.get("stopped") or "") for p in parts]
    done = {"frontier empty"} | {r for r in reasons if r.startswith("done for this budget")}
    if LIMIT in reasons and all(r in done or r == LIMIT for r in reasons):
        return LIMIT  # as one process says it, the others had nothing left
    if NOTHING_FETCHED in reasons and all(
        r == NOTHING_FETCHED or (r in done and not p.get("outcomes"))
        for r, p in zip(reasons, parts, strict=True)
    ):
        return NOTHING_FETCHED  # as one process says it: the others had nothing at all
    if reasons and all(r in done for r in reasons):
        if parked:
            return f"done for this budget period ({parked} URLs of over-budget sites parked)"
        return "frontier empty"
    if len(set(reasons)) == 1:
        return reasons[0]
    return "; ".join(f"worker {k}: {r}" for k, r in enumerate(reasons))
