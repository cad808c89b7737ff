"""Sitemaps found in a crawl's own WARC files: robots.txt ``Sitemap:`` lines and
sitemap documents, turned into URL records by the sitemap stage.

One job: tell, from a response alone, whether it is a robots.txt or a sitemap, and
give its records. ``crawlkit extract`` calls it, so ``crawlkit crawl`` (which fetches
robots.txt into its WARC files) feeds the frontier from sitemaps without fetching
anything on the side: every sitemap goes through the same polite, robots-checked
fetcher as pages, and is archived.

* A robots.txt is an HTTP 200 response for the path ``/robots.txt``; each ``Sitemap:``
  line (RFC 9309 2.2.4, parsed by :mod:`crawlkit.robots`) becomes a record with
  ``reason: "sitemap"`` and ``kind: "sitemap"``.
* A sitemap is told by its content, as :mod:`crawlkit.sitemap.parse` tells formats apart
  (gzip is opened first): XML whose root element is ``urlset``, ``sitemapindex``,
  ``rss``, ``rdf:RDF`` or ``feed``, or a plain text body whose first lines are all
  absolute http(s) URLs. Its records are the sitemap stage's (``lastmod`` and
  ``priority`` kept, children of an index with ``kind: "sitemap"``). A URL on another
  host than the sitemap's is kept as a link is, with ``cross_host: true`` and without
  the sitemap's ``lastmod``, ``changefreq`` and ``priority`` (the default priority
  instead): the protocol lets a sitemap speak for its own host only (or for a host
  whose robots.txt names it, which is not in hand here), so its claims about another
  host's pages are not taken, but the URL is a URL the crawl has found, and
  ``--scope`` decides as for any link. Refusing it would lose pages a site's own
  links lead to (seen set) or, remembered apart, fetch them twice.

Work is bounded by the sitemap stage's limits (50,000 URLs, 50 MiB a file); a broken
or hostile document keeps the records before the damage and is reported.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from urllib.parse import urlsplit

from crawlkit.diag import Reporter
from crawlkit.errors import InvalidURL
from crawlkit.records import LinkRecord, url_record
from crawlkit.robots import RobotsTxt
from crawlkit.sitemap.parse import DEFAULT_PRIORITY, SitemapError, parse_sitemap
from crawlkit.url import Canonicalizer

__all__ = ["is_robots_txt", "looks_like_sitemap", "robots_records", "sitemap_records"]

# (a urlset or index root in another case is read too: see sitemap.xmlhandler)
_ROOTS = re.compile(rb"<(?:[A-Za-z0-9_.-]+:)?((?i:urlset|sitemapindex)|rss|RDF|feed)[\s>/]")
# a text sitemap's line: a URL, or a URL and a tab and anything (sitemap.entries
# reads the URL up to the tab)
_TEXT_URL = re.compile(rb"\s*https?://\S+(?:\t[^\r\n]*)?\s*$")
_SNIFF = 4096
# XML's prolog before the root element: white space, the declaration and processing
# instructions, comments (which may hold "<" or run for a licence's length), DOCTYPE.
_PROLOG = re.compile(rb"(?:\s++|<\?.*?\?>|<!--.*?-->|<!(?!--)[^>]*+>)*+", re.DOTALL)
_SNIFF_XML = 65536  # how far the prolog is read


def is_robots_txt(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.path == "/robots.txt" and not parts.query


def _head(body: bytes) -> bytes:
    """The first bytes of the document, gzip opened (a little of it)."""
    if body.startswith(b"\x1f\x8b"):
        try:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body[:65536], _SNIFF_XML)
        except zlib.error:
            return b""
    return body[:_SNIFF_XML]


def looks_like_sitemap(body: bytes) -> bool:
    """Whether ``body`` is a sitemap or feed document (see the module docstring)."""
    head = _head(body)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16, as the sitemap stage reads it
        head = head.decode("utf-16", errors="replace").encode("utf-8")
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"<"):
        # the root element: the first tag after the prolog
        return _ROOTS.match(head, _PROLOG.match(head).end()) is not None  # type: ignore[union-attr]
    head = head[:_SNIFF]
    lines = [line for line in head.split(b"\n")[:20] if line.strip()]
    if len(lines) > 1 and len(head) == _SNIFF:
        lines = lines[:-1]  # the last line may be cut
    return bool(lines) and all(_TEXT_URL.match(line) for line in lines)


def robots_records(
    body: bytes, robots_url: str, canon: Canonicalizer, warn: Callable[[str], None]
) -> list[LinkRecord]:
    """The link records of the ``Sitemap:`` lines of one robots.txt."""
    out: list[LinkRecord] = []
    for raw in RobotsTxt.parse(body).sitemaps:
        try:
            parsed = canon.parse(raw, robots_url)
        except InvalidURL as exc:
            warn(f"{robots_url}: Sitemap {raw[:200]!r} skipped: {exc}")
            continue
        rec: LinkRecord = {
            **url_record(parsed, depth=0, reason="sitemap"),
            "kind": "sitemap",
            "via": robots_url,
            "from": robots_url,
            "nofollow": False,
            "tag": "robots",
        }
        out.append(rec)
    return out


class _Warn(Reporter):
    """A reporter that hands warnings to a function (workers pass them back)."""

    def __init__(self, warn: Callable[[str], None]):
        super().__init__()
        self._warn = warn

    def warn(self, message: str, kind: str = "warning") -> None:
        self._warn(message)


def sitemap_records(body: bytes, sitemap_url: str, warn: Callable[[str], None]) -> list[LinkRecord]:
    """The link records of one sitemap document's URLs (those before any damage); those
    on another host than the sitemap's carry ``cross_host: true`` and none of the
    sitemap's claims about them (see the module docstring)."""
    out: list[LinkRecord] = []
    try:
        own = Canonicalizer().parse(sitemap_url).host
    except InvalidURL as exc:
        warn(f"{sitemap_url}: sitemap at an invalid URL skipped: {exc}")
        return out
    try:
        for found in parse_sitemap(body, sitemap_url, reporter=_Warn(warn)):
            found.setdefault("via", sitemap_url)
            rec: LinkRecord = {**found, "from": sitemap_url, "nofollow": False, "tag": "sitemap"}
            if found["host"] != own:
                rec.pop("lastmod", None)
                rec.pop("changefreq", None)
                rec["priority"] = DEFAULT_PRIORITY
                rec["cross_host"] = True
            out.append(rec)
    except SitemapError as exc:
        warn(f"{sitemap_url}: {exc}")
    return out
