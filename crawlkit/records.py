"""The records stages exchange (docs/design.md "Records"), as typed dicts with constructors.

:data:`Record` is the one alias for a record in flight (any JSON object, or records of
mixed kinds, such as ``frontier add``'s input); signatures that know the kind use the
:class:`~typing.TypedDict` below: the stage functions of canon, sitemap, fetch, dedup
and shard, and every ``on_refused`` callback (a :class:`Refusal`). Records read from a
file are cast to their kind once, where they are read; writers take any mapping.

Records are NDJSON objects on the wire, so in code they stay plain dicts (orjson
writes a dict fastest, and unknown fields pass through untouched); the
:class:`~typing.TypedDict` classes below give each field one name, one type and one
meaning, and the constructors build them with the key order stages have always
written (tests and users diff the bytes). Every field is documented once, here.

One name, one meaning
---------------------
Readers accept what older writers wrote; writers write only the names below.

``priority`` (URL record, fixed by docs/design.md)
    A hint from whoever found the URL, 0.0-1.0, **higher is sooner**: a sitemap's
    ``<priority>`` (default 0.5), a seed's 1.0 (``crawl``'s seeds; a seeds file given
    to a stage carries none), a link's ``1/(depth + 1)`` halved for nofollow, a
    recrawl's :func:`importance_priority`; a redirect keeps its source's. Always a
    JSON float (an integer there is an older frontier's level, see ``level``).
``importance`` (recrawl records, page history)
    What a page is worth to the recrawl stage, 0..3, **0 is most important**; it
    scales the wait before the next visit (0 ×0.5 … 3 ×1.5). Older recrawl records
    also wrote it as ``priority``; :func:`importance_of` reads either.
``level`` (the frontier's queues)
    The frontier's queue level, 0..3, **0 is most urgent**, decided when a URL is
    queued and written as ``level`` on the records ``frontier next`` hands out (the
    URL's ``priority`` hint is left as it came). Frontiers of older releases wrote the
    level under ``priority`` (an integer, where a hint is a float);
    :func:`queue_level` reads ``level`` and that old spelling, telling them apart by
    type.
A refusal's reason
    Every record of a URL that will not be fetched has ``outcome: "refused"``,
    ``refused`` (a short code: ``blocked``, ``out-of-scope``, ``shard``,
    ``duplicate``, ``address``, ``invalid-url``, a trap limit such as
    ``path-depth``, ``excluded``, ``url-length``, crawl's link step's
    ``requisite-depth`` and ``from-requisite``) and ``detail`` (one sentence for a
    person). A fetch record of a refusal is a whole fetch record (its fetch fields
    null) that also keeps docs/design.md's ``error`` (the same sentence), as every
    failed fetch does: :func:`fetch_refusal` makes all of them (duplicates, invalid
    URLs, the network policy's ``address``, a shard's ``shard``). :func:`refusal_reason` and
    :func:`refusal_detail` also read records of older fetchers, which carry only
    ``error``.
Cycle
    One pass of the docs/design.md pipeline (frontier next → fetch → extract → seen-merge
    → frontier add), e.g. ``STATE/crawl/cycles/NNNNNN``. The time after which the
    frontier's per-site budgets refill is the **budget period** (``frontier next
    --budget-period``; ``--cycle`` is its old, hidden spelling, and the frontier's
    manifest keeps its ``cycle`` key for compatibility).
Batch
    The URL records ``frontier next`` hands to one fetch (docs/design.md's fetch batch).
    The records a stage checks and commits together (seen-merge, dedup) are a
    **chunk** (``seen-merge --chunk-size``; ``--batch-size`` is its hidden old name,
    and its ``--stats`` keep the ``batches`` key).
Slot map
    The fleet's JSON map of slots to owners and epochs; the option is ``--slot-map``
    in every command (``shard --map`` still works, hidden).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, Protocol, Required, TypedDict, cast

__all__ = [
    "CanonRecord",
    "DedupRecord",
    "FetchRecord",
    "LinkRecord",
    "PageRecord",
    "Record",
    "RecrawlRecord",
    "Refusal",
    "SiteYieldRecord",
    "URLRecord",
    "WarcLocation",
    "WhereRecord",
    "canon_record",
    "dedup_record",
    "error_code",
    "fetch_record",
    "fetch_refusal",
    "importance_of",
    "importance_priority",
    "link_fields",
    "page_record",
    "queue_level",
    "recrawl_record",
    "refusal",
    "refusal_detail",
    "refusal_reason",
    "url_record",
    "where_record",
]

#: A record as stages pass it around: any JSON object (unknown fields pass through).
#: The one alias of the project; the TypedDicts below name the fields each kind has.
Record = dict[str, Any]

#: Why a URL record exists (``reason``).
Reason = Literal["seed", "link", "requisite", "sitemap", "redirect", "recrawl"]


class URLParts(Protocol):
    """A canonical URL with the fields every URL record carries: what
    :meth:`crawlkit.url.Canonicalizer.parse` returns (declared here by shape, so the
    records, a core module, do not import the URL layer above them)."""

    @property
    def url(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def site(self) -> str: ...
    @property
    def fp(self) -> str: ...


class URLRecord(TypedDict, total=False):
    """A URL to crawl (docs/design.md "URL record"); every other URL-bearing record extends it."""

    url: Required[str]  #: the canonical URL (crawlkit.url.Canonicalizer)
    host: str  #: hostname[:port], the unit of politeness and of robots.txt
    site: str  #: registered domain (Public Suffix List), or the IP / bare host
    fp: str  #: xxh3-64 of the canonical URL's UTF-8 bytes, 16 lowercase hex digits
    depth: int  #: hops from a seed (a seed and a sitemap entry are 0)
    priority: float  #: finder's hint, 0.0-1.0, higher is sooner (see the module docstring)
    reason: str  #: why it is here: one of :data:`Reason`
    via: str  #: the URL it was found at (page, sitemap, robots.txt, redirect source)
    lastmod: str  #: a sitemap's lastmod, ISO 8601 UTC (``...Z``)
    changefreq: str  #: a sitemap's changefreq, as written there
    due: str  #: when a recrawl is due, ISO 8601 UTC
    kind: str  #: "sitemap" when the URL is itself a sitemap (fetched and read as one)
    cross_host: bool  #: listed by a sitemap (``via``) of another host: queued as a link,
    #: without that sitemap's lastmod, changefreq and priority
    hops: int  #: redirects followed to reach it (``reason: "redirect"``)
    seed_redirect: bool  #: a redirect target reached from a seed: a seed to --scope host|site
    importance: int  #: a recrawl's page importance, 0..3, 0 most important
    level: int  #: the frontier's queue level, 0..3, 0 most urgent


# "from" is a Python keyword: the functional form names it.
_LinkFields = TypedDict(
    "_LinkFields",
    {
        "from": str,  # the page (or stylesheet, robots.txt) the link was found on
        "nofollow": bool,  # rel=nofollow, or the page's robots nofollow: not an endorsement
        "tag": str,  # the element it came from: a, link, img, css, import, robots, ...
    },
    total=False,
)


class LinkRecord(URLRecord, _LinkFields, total=False):
    """A URL record plus ``from``, ``nofollow`` and ``tag`` (docs/design.md "Link record")."""


class RecrawlRecord(TypedDict, total=False):
    """A URL due for a recrawl (``crawlkit recrawl``): a URL record plus its history.

    Fields shared with :class:`URLRecord` mean the same; ``host`` and ``site`` are
    null for a page whose history predates them.
    """

    url: Required[str]  #: the canonical URL
    host: str | None  #: hostname[:port]
    site: str | None  #: registered domain
    fp: str  #: fingerprint of url, 16 hex digits
    reason: str  #: always "recrawl"
    depth: int  #: hops from a seed when it was first fetched
    priority: float  #: the hint of its importance (:func:`importance_priority`)
    importance: int  #: the page's importance, 0..3, 0 most important
    due: str  #: when the recrawl is due, ISO 8601 UTC

    interval: float  #: seconds until the next visit after this one (importance applied)
    etag: str | None  #: the ETag of the last fetch, for If-None-Match
    last_modified: str | None  #: the Last-Modified of the last fetch, for If-Modified-Since
    digest: str | None  #: the payload digest it had (a 304 is a revisit of that capture)
    last_fetch: str | None  #: when it was last fetched, ISO 8601 UTC
    changes: int  #: fetches that found the page changed
    checks: int  #: fetches that compared the page with the one before


class WarcLocation(TypedDict):
    """Where a capture is stored: a WARC file and a byte range in it."""

    file: str  #: the WARC file's name (relative to the WARC directory)
    offset: int  #: bytes from the file's start to the record (its gzip member)
    length: int  #: bytes of the record (its gzip member)


class FetchRecord(URLRecord, total=False):
    """The answer for one input URL (docs/design.md "Fetch record", invariant 1).

    The input URL record's fields are kept; these are set on every fetch record.
    """

    status: int | None  #: the HTTP status, or None when no response arrived
    outcome: str  #: fetched, not-modified, redirect, robots-denied, deferred, refused, error
    fetched_at: str | None  #: when the request started, ISO 8601 UTC
    elapsed_ms: float | None  #: milliseconds from the request to the whole response
    ip: str | None  #: the address connected to (the one the network policy checked)
    bytes: int | None  #: bytes of the (decoded) body archived
    content_type: str | None  #: the response's Content-Type header
    etag: str | None  #: the response's ETag (the input's on a 304)
    last_modified: str | None  #: the response's Last-Modified (the input's on a 304)
    digest: str | None  #: the WARC payload digest (``sha1:`` base32)
    location: str | None  #: a redirect's target, canonical when it could be parsed
    warc: WarcLocation | None  #: where the response record was written
    error: str | None  #: why it failed or was refused or deferred, one sentence
    error_code: str  #: a classified failure: tls-expired, dns-nxdomain, proxy-refused, ...
    tls_unverified: str  #: fetched with --insecure after this TLS failure code
    truncated: str  #: why the body was cut short: length (a cap), time, disconnect
    retry_at: str  #: a deferred URL's earliest retry, ISO 8601 UTC
    stopped: bool  #: deferred because the run ended, not because of the host
    refused: str  #: a refusal's short code (see :class:`Refusal`)
    detail: str  #: a refusal's sentence for a person


class Refusal(URLRecord, total=False):
    """A URL that will not be fetched, and why (docs/design.md invariant 1)."""

    outcome: Required[str]  #: always "refused"
    refused: Required[str]  #: the short code: blocked, shard, duplicate, a trap limit, ...
    detail: Required[str]  #: one sentence for a person


class PageRecord(TypedDict, total=False):
    """What extract found in one HTML page (docs/design.md "Page record")."""

    url: Required[str]  #: the page's canonical URL
    host: str  #: hostname[:port]
    site: str  #: registered domain
    fp: str  #: fingerprint of url, 16 hex digits
    depth: int  #: hops from a seed
    status: int | None  #: HTTP status of the capture
    fetched_at: str | None  #: WARC-Date of the capture, ISO 8601 UTC
    content_type: str | None  #: the capture's Content-Type header
    charset: str | None  #: the charset the page was decoded with
    digest: str | None  #: the WARC payload digest
    simhash: str  #: 64-bit simhash of the visible text, 16 hex digits
    title: str | None  #: the <title>, whitespace collapsed
    canonical: str | None  #: the rel=canonical URL, canonicalized
    noindex: bool  #: meta robots / X-Robots-Tag noindex
    nofollow: bool  #: meta robots / X-Robots-Tag nofollow
    links: int  #: link records written for it (count)
    requisites: int  #: requisite records found (count; written with --requisites)
    text_bytes: int  #: UTF-8 bytes of the visible text
    truncated: str  #: the capture's truncation reason (WARC-Truncated)
    capped: list[str]  #: the parse caps it hit (depth, attributes, time, ...)
    error: str  #: what went wrong on the page (a parse step raised, its parser died)


class DedupRecord(TypedDict):
    """One page's verdict from ``crawlkit dedup``."""

    url: str  #: the page's URL
    kind: str  #: exact, near or unique
    dup_of: str | None  #: the first URL with the same content (exact) or the closest (near)
    distance: int | None  #: simhash bits apart from dup_of (0 for exact)
    site: str | None  #: registered domain
    fp: str  #: fingerprint of url
    digest: str | None  #: the page record's digest
    simhash: str | None  #: the page record's simhash


# "yield" is a Python keyword: the functional form names it.
SiteYieldRecord = TypedDict(
    "SiteYieldRecord",
    {
        "site": str,  # registered domain
        "pages": int,  # recent pages of the site checked
        "exact": int,  # of which exact copies
        "near": int,  # of which near copies
        "yield": float,  # share of copies, (exact + near) / pages
    },
)


class CanonRecord(TypedDict):
    """One input line's answer from ``crawlkit canon --json``."""

    input: str | None  #: the line as read (None when it was not UTF-8 / too long)
    url: str | None  #: the canonical URL, None when the line is unusable
    host: str | None  #: hostname[:port]
    site: str | None  #: registered domain
    fp: str | None  #: fingerprint of url
    error: str | None  #: why the line is unusable, else None


class WhereRecord(TypedDict):
    """Where a URL lives in a fleet (``crawlkit shard --which``)."""

    url: str  #: the canonical URL
    site: str  #: registered domain, the unit of sharding
    slot: int  #: the site's hash slot
    shard: int  #: the shard that owns the slot
    epoch: int  #: the slot's ownership epoch


# --------------------------------------------------------------------- constructors


def url_record(
    parsed: URLParts,
    *,
    depth: int | None,
    reason: str,
    priority: float | None = None,
) -> URLRecord:
    """A URL record: url, host, site, fp[, depth][, priority], reason (in that order).

    ``depth`` and ``priority`` are left out when None (a redirect target keeps only
    what its source had). Callers add optional fields (``via``, ``lastmod``, ``kind``,
    ``hops``, ...) after these.
    """
    rec: URLRecord = {"url": parsed.url, "host": parsed.host, "site": parsed.site, "fp": parsed.fp}
    if depth is not None:
        rec["depth"] = depth
    if priority is not None:
        rec["priority"] = priority
    rec["reason"] = reason
    return rec


def link_fields(
    *, depth: int, priority: float, reason: str, source: str, nofollow: bool
) -> dict[str, Any]:
    """The fields a link record adds after ``fp``: depth, priority, reason, via, from, nofollow.

    ``via`` and ``from`` both name the source page (``via`` as every URL record has
    it, ``from`` as docs/design.md's link record has it).
    """
    return {
        "depth": depth,
        "priority": priority,
        "reason": reason,
        "via": source,
        "from": source,
        "nofollow": nofollow,
    }


def importance_priority(importance: int) -> float:
    """The ``priority`` hint of a page of ``importance`` 0..3: 1.0, 0.75, 0.5, 0.25."""
    return 1.0 - min(max(importance, 0), 3) / 4


def recrawl_record(
    *,
    url: str,
    host: str | None,
    site: str | None,
    fp: str,
    depth: int,
    importance: int,
    due: str,
    interval: float,
    etag: str | None,
    last_modified: str | None,
    last_fetch: str | None,
    changes: int,
    checks: int,
    digest: str | None = None,
) -> RecrawlRecord:
    """A URL due for a recrawl, in the order ``crawlkit recrawl`` writes it."""
    return {
        "url": url,
        "host": host,
        "site": site,
        "fp": fp,
        "reason": "recrawl",
        "depth": depth,
        "priority": importance_priority(importance),
        "importance": importance,
        "due": due,
        "interval": interval,
        "etag": etag,
        "last_modified": last_modified,
        "digest": digest,
        "last_fetch": last_fetch,
        "changes": changes,
        "checks": checks,
    }


_ERROR_CODE = re.compile(r"\b((?:tls|dns|proxy)-[a-z]+(?:-[a-z]+)*):")


def error_code(error: str | None) -> str | None:
    """The code of a classified failure named in ``error`` (``tls-expired: ...``)."""
    match = _ERROR_CODE.search(error) if error else None
    return match.group(1) if match else None


def fetch_record(rec: Mapping[str, Any], url: str, outcome: str, **fields: Any) -> FetchRecord:
    """The fetch record of input ``rec``: its fields, then every fetch field (null unless
    given in ``fields``), then ``error_code`` when ``error`` names a classified failure.

    ``etag`` and ``last_modified`` default to the input's (a conditional GET's
    validators stay with the URL), and so does ``digest`` of a ``deferred`` record (the
    payload the page had: its next attempt's 304 refers to it). ``error_code`` and
    ``tls_unverified`` of an earlier fetch of the same record are dropped.
    """
    out = dict(rec)
    out.update(
        url=url,
        status=None,
        outcome=outcome,
        fetched_at=None,
        elapsed_ms=None,
        ip=None,
        bytes=None,
        content_type=None,
        etag=rec.get("etag"),
        last_modified=rec.get("last_modified"),
        digest=rec.get("digest") if outcome == "deferred" else None,
        location=None,
        warc=None,
        error=None,
    )
    out.pop("error_code", None)
    out.pop("tls_unverified", None)
    out.update(fields)
    code = error_code(out["error"])
    if code is not None:
        out["error_code"] = code
    return cast(FetchRecord, out)


def fetch_refusal(rec: Mapping[str, Any], url: str, refused: str, detail: str) -> FetchRecord:
    """The fetch record of a URL the fetcher will not ask for: ``outcome: "refused"``,
    ``refused`` and ``detail`` as every refusal has them, and ``error`` (the same
    sentence) as every fetch record that did not fetch has it."""
    return fetch_record(rec, url, "refused", refused=refused, detail=detail, error=detail)


def refusal(rec: Mapping[str, Any], refused: str, detail: str) -> Refusal:
    """``rec`` refused: its fields plus ``outcome: "refused"``, ``refused`` and ``detail``."""
    return cast(Refusal, {**rec, "outcome": "refused", "refused": refused, "detail": detail})


def refusal_reason(rec: Mapping[str, Any]) -> str:
    """A refusal's short code; records of older fetchers carry only ``error``."""
    return str(rec.get("refused") or rec.get("error") or "refused")


def refusal_detail(rec: Mapping[str, Any]) -> str | None:
    """A refusal's sentence: ``detail``, else ``error`` (older fetchers), else None."""
    text = rec.get("detail") or rec.get("error")
    return str(text) if text else None


def importance_of(rec: Mapping[str, Any]) -> int | None:
    """A page's importance 0..3 from a recrawl or fetch record, None when it has none.

    ``importance`` first; else the frontier's level it was queued at (``level``, or
    an integer ``priority`` as frontiers of older releases wrote it).
    """
    value = rec.get("importance")
    if type(value) is int:
        return value
    return queue_level(rec)


def queue_level(rec: Mapping[str, Any]) -> int | None:
    """The frontier queue level 0..3 of a record, None when it has none.

    ``level``, else an integer ``priority`` (the frontier's old spelling; a finder's
    hint is always a float, so the two never mix up).
    """
    for key in ("level", "priority"):
        value = rec.get(key)
        if type(value) is int and 0 <= value <= 3:
            return value
    return None


def page_record(
    parsed: URLParts,
    *,
    depth: int,
    status: int | None,
    fetched_at: str | None,
    content_type: str | None,
    charset: str | None,
    digest: str | None,
    simhash: int,
    title: str | None,
    canonical: str | None,
    noindex: bool,
    nofollow: bool,
    links: int,
    requisites: int,
    text_bytes: int,
) -> PageRecord:
    """A page record, in the order ``crawlkit extract`` writes it (``simhash`` as int)."""
    return {
        "url": parsed.url,
        "host": parsed.host,
        "site": parsed.site,
        "fp": parsed.fp,
        "depth": depth,
        "status": status,
        "fetched_at": fetched_at,
        "content_type": content_type,
        "charset": charset,
        "digest": digest,
        "simhash": f"{simhash:016x}",
        "title": title,
        "canonical": canonical,
        "noindex": noindex,
        "nofollow": nofollow,
        "links": links,
        "requisites": requisites,
        "text_bytes": text_bytes,
    }


def dedup_record(
    *,
    url: str,
    kind: str,
    dup_of: str | None,
    distance: int | None,
    site: str | None,
    fp: str,
    digest: Any,
    simhash: Any,
) -> DedupRecord:
    """A dedup verdict; ``digest`` and ``simhash`` are copied from the page record as they are."""
    return {
        "url": url,
        "kind": kind,
        "dup_of": dup_of,
        "distance": distance,
        "site": site,
        "fp": fp,
        "digest": digest,
        "simhash": simhash,
    }


def canon_record(
    text: str | None, parsed: URLParts | None, error: str | None = None
) -> CanonRecord:
    """``crawlkit canon``'s answer for one line: the URL's fields, or nulls and ``error``."""
    if parsed is None:
        return {"input": text, "url": None, "host": None, "site": None, "fp": None, "error": error}
    return {
        "input": text,
        "url": parsed.url,
        "host": parsed.host,
        "site": parsed.site,
        "fp": parsed.fp,
        "error": None,
    }


def where_record(url: str, site: str, slot: int, shard: int, epoch: int) -> WhereRecord:
    """Where a URL lives in a fleet."""
    return {"url": url, "site": site, "slot": slot, "shard": shard, "epoch": epoch}
