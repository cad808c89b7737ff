"""Recovery: finish what a stopped or killed run left, losing nothing.

The fetch log of a cycle is appended and flushed per record and the batches handed to
the fetcher are on disk before the frontier lets go of their URLs, so after a crash
the open WARC files are cut back to their last whole record, the fetch records that
point past the cut are dropped, unfinished cycles are post-processed, and only the
URLs without a fetch record (in flight at the crash) are fetched again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from crawlkit import streams
from crawlkit.crawl.cycle import CycleRunner
from crawlkit.crawl.files import CrawlDir, is_done, mark_done, read_file
from crawlkit.crawl.summary import LIMIT, CrawlSummary
from crawlkit.diag import Reporter
from crawlkit.records import FetchRecord, fetch_record
from crawlkit.streams import Record
from crawlkit.times import iso
from crawlkit.warc.places import warc_new_dir
from crawlkit.warc.write import finish_open_file

__all__ = ["Leftover", "Recovery", "within_limit"]


@dataclass
class Leftover:
    """What a recovery leaves to fetch again: the URLs handed to the fetcher before the
    stop that have no fetch record, and the batch files they are in (deleted once the
    URLs are in a batch file of the new run)."""

    records: list[Record] = field(default_factory=list)
    batches: list[Path] = field(default_factory=list)


class Recovery:
    """What a run does first: finish what a stopped or killed run left."""

    def __init__(
        self, dir: CrawlDir, cycles: CycleRunner, summary: CrawlSummary, reporter: Reporter
    ):
        self.dir = dir
        self.cycles = cycles
        self.summary = summary
        self.rep = reporter

    def recover(self) -> Leftover:
        """Finish what a stopped or killed run left: returns the URLs to fetch again."""
        unfinished = [c for c in self.dir.cycle_dirs() if not is_done(c, "cycle")]
        if not unfinished and not self.dir.batch_files():
            return Leftover()
        valid_end = self._close_open_warcs()
        for cycle in unfinished:
            if not (cycle / "fetch.ndjson").exists():
                # Killed at a cut, between making the cycle's directory and its log:
                # it fetched nothing. Its steps read the log, so it is made, empty (a
                # run before this fix marked its fetch done without one: made too).
                streams.atomic_write_bytes(cycle / "fetch.ndjson", b"")
            if not is_done(cycle, "fetch"):
                _salvage(cycle, valid_end)
                mark_done(cycle, "fetch", {"salvaged": True})
            self.rep.info(f"finishing cycle {cycle.name} left by an earlier run")
            if not self.cycles.finish_cycle(cycle):
                return Leftover()  # out of time: the next run goes on from here
        self.cycles.archive_closed_warcs()
        pending: list[Record] = []
        batches = self.dir.batch_files()
        if batches:
            oldest = min(int(b.name.split("-", 1)[0]) for b in batches)
            fetched: set[str] = set()
            for cycle in self.dir.cycle_dirs():
                if int(cycle.name) >= oldest:
                    fetched.update(
                        str(r.get("url"))
                        for r in read_file(cycle / "fetch.ndjson")
                        if r.get("refused") != "duplicate"  # not the URL's answer
                    )
            for batch in list(batches):
                rest = [r for r in read_file(batch) if r.get("url") not in fetched]
                if rest:
                    pending += rest
                else:  # every URL of it was fetched before the stop
                    batch.unlink()
                    batches.remove(batch)
        if pending:
            self.rep.info(f"{len(pending)} URLs handed to the fetcher before the stop go again")
        self.summary.refetched += len(pending)
        return Leftover(pending, batches)

    def _close_open_warcs(self) -> dict[str, int]:
        """Cut every ``.open`` WARC file after its last whole record and close it;
        returns each file's valid end."""
        valid_end: dict[str, int] = {}
        new_dir = warc_new_dir(self.cycles.warcs.root)
        for partial in sorted(new_dir.glob("*.warc.gz.open")) if new_dir.exists() else []:
            if not self.cycles.warcs.owns(partial.name):
                continue  # a peer worker's file, being written
            valid_end[partial.name[: -len(".open")]] = finish_open_file(partial)
        return valid_end


def _salvage(cycle: Path, valid_end: dict[str, int]) -> None:
    """Keep the fetch records of ``cycle`` whose WARC records are whole on disk.

    Records pointing past the ``valid_end`` of a WARC file cut by the recovery are
    dropped (and a torn last line); their URLs are fetched again.
    """
    log = cycle / "fetch.ndjson"  # there: recover() makes a missing one
    kept: list[Record] = []
    with open(log, "rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                continue  # torn last line
            try:
                rec = streams.parse_record(line)
            except ValueError:
                continue
            warc = rec.get("warc")
            if isinstance(warc, dict):
                name = Path(str(warc.get("file"))).name
                end = int(warc.get("offset", 0)) + int(warc.get("length", 0))
                if name in valid_end and end > valid_end[name]:
                    continue
            kept.append(rec)
    streams.atomic_write_bytes(log, b"".join(streams.dumps(r) for r in kept))


def within_limit(
    records: list[Record], room: float, now: float
) -> tuple[list[Record], list[FetchRecord]]:
    """A killed run's URLs to fetch again, cut to the ``room`` --max-pages leaves, and
    the fetch records of those past it: deferred, due ``now``, never asked (fetched
    all, they took the crawl past its limit). Refusals pass whatever the room."""
    asked = [r for r in records if r.get("outcome") != "refused"]
    keep = max(0, int(min(room, len(asked))))
    over = {id(r) for r in asked[keep:]}
    back = [
        fetch_record(r, str(r["url"]), "deferred", retry_at=iso(now), error=f"{LIMIT}: not asked")
        for r in asked[keep:]
    ]
    return [r for r in records if id(r) not in over], back
