"""The frontier: what to fetch next.

* :mod:`~crawlkit.frontier.traps` — trap limits (refusals with reasons).
* :mod:`~crawlkit.frontier.priority` — levels 0..3, queue names, the weighted split.
* :mod:`~crawlkit.frontier.budgets` — per-site budgets (STAR-like) and site signals.
* :mod:`~crawlkit.frontier.queues` — on-disk FIFO queues of zstd NDJSON segments.
* :mod:`~crawlkit.frontier.add` — the add path, one named step at a time.
* :mod:`~crawlkit.frontier.batch` — the next path: the plan and the picker.
* :mod:`~crawlkit.frontier.commands` — operator blocks posted to the inbox.
* :mod:`~crawlkit.frontier.store` — :class:`Frontier`, the durable whole.
* :mod:`~crawlkit.frontier.waiting` — the waiting room: URLs held until their time.

How a batch is chosen (``Frontier.next``): the batch is split between recrawls and
new URLs (``recrawl_share``, default 60%, when both wait; all to one kind when the
other is empty), a share of the new part (``discovery_share``, 10%) goes to the
first URL of sites never handed out, and each part is split across levels 8:4:2:1
among non-empty levels. Each queue is read from its head in windows; within a
window hosts take turns (one URL per host per round) so the batch spreads over as
many hosts as possible, at most ``per_host`` per host and at most the remaining
budget per site. A shortfall (a queue ran dry, hosts at their limit) is offered to
the other queues in further rounds (eight, more for batches over 262,144); a round
that took nothing out of the queues ends the batch when every host with URLs queued
is at its limit already (reading on would only rotate their URLs to the tail).
"""

from crawlkit.frontier.budgets import BudgetPolicy, SiteTable
from crawlkit.frontier.store import Batch, Frontier, NextOptions
from crawlkit.frontier.traps import TrapChecker, TrapLimits

__all__ = [
    "Batch",
    "BudgetPolicy",
    "Frontier",
    "NextOptions",
    "SiteTable",
    "TrapChecker",
    "TrapLimits",
]
