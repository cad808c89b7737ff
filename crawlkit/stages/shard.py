"""``crawlkit shard``: a record stream split by registered-domain slot into shards.

Slots and slot maps are :mod:`crawlkit.shard.slots`; the mail between shards
(outboxes, inboxes, delivery) is :mod:`crawlkit.shard.routing`. This stage routes
records: each to the shard that owns its site's slot.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InvalidURL
from crawlkit.records import WhereRecord, where_record
from crawlkit.shard.slots import SlotMap, slot_of
from crawlkit.streams import Record
from crawlkit.url import Canonicalizer, site_of_record

__all__ = ["route_lines", "route_records", "site_of_record", "which"]


def route_records(
    records: Iterable[Record],
    slot_map: SlotMap,
    *,
    canon: Canonicalizer | None = None,
    reporter: Reporter | None = None,
) -> Iterator[tuple[int, Record]]:
    """Yield ``(shard, record)`` for every record that has a usable site.

    A record without one is reported (as ``record N``) and skipped (it has no owner
    to go to); :func:`route_lines` reports ``FILE:LINE`` instead.
    """
    numbered = (("record", n, record) for n, record in enumerate(records, 1))
    return route_lines(numbered, slot_map, canon=canon, reporter=reporter)


def route_lines(
    lines: Iterable[tuple[str, int, Record]],
    slot_map: SlotMap,
    *,
    canon: Canonicalizer | None = None,
    reporter: Reporter | None = None,
) -> Iterator[tuple[int, Record]]:
    """Like :func:`route_records`, for ``(source, line_number, record)`` as
    :func:`crawlkit.streams.read_records_with_lines` yields them; a record without a usable
    site is reported as ``FILE:LINE: reason``."""
    canon = canon or Canonicalizer()
    reporter = reporter or NullReporter()
    for source, lineno, record in lines:
        try:
            site = site_of_record(record, canon)
        except InvalidURL as exc:
            reporter.bad_record(source, lineno, str(exc))
            continue
        yield slot_map.shard_of_site(site), record


def which(url: str, slot_map: SlotMap, canon: Canonicalizer | None = None) -> WhereRecord:
    """Where a URL lives: its site, slot and shard (for operators)."""
    canon = canon or Canonicalizer()
    parsed = canon.parse(url)
    slot = slot_of(parsed.site, slot_map.slots)
    return where_record(parsed.url, parsed.site, slot, slot_map.owner[slot], slot_map.epoch[slot])
