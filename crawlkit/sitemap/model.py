"""What every part of reading a sitemap shares: the protocol's limits, the counts of
one document (:class:`SitemapStats`) and the error that ends one
(:class:`SitemapError`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from crawlkit.errors import InputError

__all__ = [
    "ABSOLUTE",
    "CHUNK",
    "DEFAULT_PRIORITY",
    "MAX_DEPTH",
    "MAX_SITEMAP_BYTES",
    "MAX_SITEMAP_URLS",
    "MAX_TEXT",
    "SitemapError",
    "SitemapStats",
]

MAX_SITEMAP_URLS = 50_000
MAX_SITEMAP_BYTES = 50 * 1024 * 1024
DEFAULT_PRIORITY = 0.5
MAX_DEPTH = 64  # real sitemaps and feeds nest fewer than 10 levels
MAX_TEXT = 64 * 1024  # longest field text or text line kept (URLs are capped far lower)
CHUNK = 64 * 1024  # bytes read (and parsed) at a time
ABSOLUTE = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.\-]*:")  # a URL with a scheme


class SitemapError(InputError):
    """A sitemap that cannot be read on: malformed or hostile XML, corrupt gzip."""


@dataclass
class SitemapStats:
    """What one document gave: counts for the summary line."""

    format: str = "unknown"  # urlset, sitemapindex, rss, rdf, atom, text, empty
    urls: int = 0  # URL records emitted
    sitemaps: int = 0  # sitemap-index children emitted
    invalid: int = 0  # entries skipped for a bad or missing URL
    over_limit: int = 0  # entries beyond max_urls (counted, not emitted)
    foreign: int = 0  # skipped for naming another host (same_host only)
    misplaced: int = 0  # <url> in a sitemap index, <sitemap> in a urlset (skipped)
    split: int = 0  # <loc>s after the first in one <url>/<sitemap> (a record each)
    bare: int = 0  # <url>/<sitemap> without <loc> whose own text is the URL (taken)
    case_folded: int = 0  # sitemap elements named in another case (<Loc>), read as theirs
    bytes: int = 0  # uncompressed bytes read
    truncated: bool = False  # stopped at max_bytes
    trailing: int = 0  # line where text after the root element's end began (skipped)
    ampersands: int = 0  # bare "&" (beginning no reference) read as "&amp;"
