"""Operator blocks (``crawlkit frontier block``) in a running crawl.

The frontier applies a posted block at its next batch and refuses the target's queued
URLs. What the crawl holds outside the frontier is refused here, so that only the
requests already in flight are still made: the URLs the fetcher holds (with few hosts
at a short gap up to :data:`crawlkit.crawl.feed.FEW_HOSTS_PER_HOST` a host), and the
URLs a killed run left to fetch again, which a restart hands to the fetcher before
any batch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from crawlkit import streams
from crawlkit.frontier.commands import blocked_record, commands_waiting
from crawlkit.frontier.store import Frontier
from crawlkit.records import Record, refusal

__all__ = ["OperatorBlocks", "hand_posted"]

REASON = "blocked"
DETAIL = "operator block"  # as the frontier's own refusals say it


class OperatorBlocks:
    """The blocks the crawl's fetch side obeys, kept level with ``frontier``'s; the
    refusals made here go to ``on_refused`` (the summary's count) too."""

    def __init__(self, frontier: Frontier, on_refused: Callable[[list[Record]], None]):
        self.frontier = frontier
        self.on_refused = on_refused
        self.applied = set(frontier.blocks)

    def posted(self) -> bool:
        """Whether a command waits in the frontier's inbox (the next batch applies it)."""
        return commands_waiting(self.frontier.inbox)

    def refuse_held(self, fetcher: Any) -> None:
        """After a batch: if it applied a block, the fetcher's queued URLs of the
        target are answered refused instead of fetched."""
        if self.frontier.blocks == self.applied:
            return
        self.applied = set(self.frontier.blocks)
        self.on_refused(fetcher.refuse_queued(blocked_record(self.applied), REASON, DETAIL))

    def leftover(self, records: list[Record]) -> list[Record]:
        """A killed run's URLs to fetch again, those of a blocked target as refusals
        (the fetcher passes them through as refused fetch records, never asked)."""
        blocked = blocked_record(self.applied)
        out: list[Record] = [dict(refusal(r, REASON, DETAIL)) if blocked(r) else r for r in records]
        self.on_refused([r for r in out if r.get("refused") == REASON])
        return out


def hand_posted(state: Path, workers: list[Path]) -> None:
    """Post the commands waiting in ``state``'s frontier inbox to each of ``workers``'
    frontiers: those posted to a state before it was a crawl of workers (which reads
    only its workers' frontiers; ``frontier block`` posts to each from then on), and
    those of a worker that never ran to the workers added. A copy keeps its name, so
    doing it again adds nothing."""
    inbox = state / "frontier" / "inbox"
    for command in sorted(inbox.glob("*.json")) if inbox.is_dir() else []:
        for worker in workers:
            copy = worker / "frontier" / "inbox" / command.name
            if not copy.exists():
                copy.parent.mkdir(parents=True, exist_ok=True)
                streams.atomic_write_bytes(copy, command.read_bytes())
