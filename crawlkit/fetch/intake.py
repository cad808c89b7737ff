"""The fetch's intake: which input records become queued URLs, and which are
answered at once without a request (no URL, refused upstream, a URL no request line
can carry or that is not http(s), the same URL already queued or in flight).
"""

from __future__ import annotations

import re

from crawlkit.errors import InvalidURL
from crawlkit.fetch.hosts import Host, HostTable, Item, split_url
from crawlkit.fetch.outcome import Outbox, Record, fetch_record, fetch_refusal

__all__ = ["UNSENDABLE", "take"]

UNSENDABLE = re.compile(r"[\x00-\x20\x7f]")  # never in a URL as sent (WHATWG encodes them)


def take(rec: Record, outbox: Outbox, hosts: HostTable) -> Host | None:
    """Queue one input record on its host (made if new) and return the host, or
    answer it at once in ``outbox`` and return None (``refused``: no URL, refused
    upstream, not an http(s) URL, already queued or in flight). The caller prepares
    or schedules the host."""
    emit = outbox.emit
    url = rec.get("url")
    if not isinstance(url, str) or not url:
        out = fetch_refusal(rec, "", "invalid-url", "record has no url")
        out["url"] = url  # as it came (null, a number, absent): no made-up string
        emit(out, settles=False)
        return None
    if rec.get("outcome") == "refused":
        # Refused upstream (a frontier block, a trap limit): passed through, never
        # fetched, still one record for it.
        why = rec.get("detail") or rec.get("refused") or "refused before the fetch"
        emit(fetch_record(rec, url, "refused", error=str(why)), settles=False)
        return None
    try:
        if not url.isascii() or UNSENDABLE.search(url):
            # A request line and the WARC's headers take it as it is: a CR LF in it
            # wrote headers of its own into the WARC, a space split the request line.
            raise InvalidURL(
                "URL holds a space, a control or a non-ASCII character "
                "(give canonical URLs: crawlkit canon, frontier next)"
            )
        sp = split_url(url)
    except InvalidURL as exc:
        emit(fetch_refusal(rec, url, "invalid-url", str(exc)), settles=False)
        return None
    accepted = outbox.accepted
    if url in accepted:
        # The same URL twice in a batch (or handed out again while the first is
        # still queued): the server is asked once; the repeat comes out refused.
        why = "the same URL is already queued or in flight"
        emit(fetch_refusal(rec, url, "duplicate", why), settles=False)
        return None
    accepted.add(url)
    host = hosts.get(sp)
    host.items.append(Item(rec, url, sp.origin))
    return host
