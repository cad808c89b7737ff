"""The XML vocabularies a sitemap comes in: the sitemap protocol's urlset and sitemap
index, RSS 2.0, RSS 1.0 and 0.90 (RDF) and Atom feeds. For each, which root element names it,
which element is a record and which of its children are the record's fields, and
the namespaces they may be in. :mod:`crawlkit.sitemap.xmlhandler` reads by them."""

from __future__ import annotations

__all__ = [
    "ATOM03_NS",
    "DC_NS",
    "FEED_NS",
    "FIELDS",
    "FORMATS",
    "NEWS_NS",
    "OTHER_RECORD",
    "RSS1_NS",
    "SEP",
    "SITEMAP_NS",
    "XHTML_NS",
    "XML_BASE",
    "split_name",
]

RSS1_NS = "http://purl.org/rss/1.0/"
# RSS 0.90, Netscape's first (an rdf:RDF root too); still served by old CMSs
RSS090_NS = "http://my.netscape.com/rdf/simple/0.9/"
# Atom 0.3, the draft before RFC 4287 (Blogger served it for years): its <feed> and
# <entry> dated by <modified> and <issued> where Atom 1.0 has <updated>, <published>.
ATOM03_NS = "http://purl.org/atom/ns#"
DC_NS = "http://purl.org/dc/elements/1.1/"
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"
XHTML_NS = "http://www.w3.org/1999/xhtml"  # <xhtml:link rel="alternate" hreflang=...>
# The namespaces a sitemap's own elements are found in: the protocol's, the older
# Google one, and none. A <url xmlns=""> under a namespaced <urlset> (a case scrapy
# keeps a fixture of), or plain <url> under <sm:urlset>, was skipped whole: 0 URLs,
# exit 0, nothing said. Extensions (image:, video:, news:, xhtml:) stay apart.
SITEMAP_NS = frozenset(
    {
        "",
        "http://www.sitemaps.org/schemas/sitemap/0.9",
        "https://www.sitemaps.org/schemas/sitemap/0.9",
        "http://www.google.com/schemas/sitemap/0.84",
    }
)
# RSS 2.0 in a namespace of its own (Userland's proposal, which Radio UserLand and
# Yandex-fed Russian sites wrote: <rss xmlns="http://backend.userland.com/rss2">)
RSS2_NS = frozenset(
    {
        "http://backend.userland.com/rss2",
        "http://backend.userland.com/rss",
        "http://blogs.law.harvard.edu/tech/rss",
    }
)
# format -> the namespaces of an RSS feed's <item> fields (its items may also be in
# RSS1_NS). An RSS 0.90 feed's items are in RSS090_NS, a namespaced RSS 2.0 feed's
# in RSS2_NS: they were skipped whole, 0 URLs and exit 0 with nothing said.
FEED_NS = {
    "rdf": frozenset({"", RSS1_NS, RSS090_NS}),
    "rss": frozenset({""}) | RSS2_NS,
}
SEP = "\x1f"  # expat namespace separator: "ns\x1flocal"; cannot occur in a name
XML_BASE = "http://www.w3.org/XML/1998/namespace\x1fbase"  # xml:base, as expat names it

FORMATS = {
    # root local name -> (format, record local name)
    "urlset": ("urlset", "url"),
    "sitemapindex": ("sitemapindex", "sitemap"),
    "rss": ("rss", "item"),
    "RDF": ("rdf", "item"),
    "feed": ("atom", "entry"),
}
# format -> the record name of the other sitemap format, skipped and counted there
OTHER_RECORD = {"urlset": ("sitemap",), "sitemapindex": ("url",)}
# format -> {field local name: record key}
FIELDS = {
    "urlset": {
        "loc": "loc",
        "lastmod": "lastmod",
        "changefreq": "changefreq",
        "priority": "priority",
    },
    "sitemapindex": {"loc": "loc", "lastmod": "lastmod"},
    "rss": {"link": "loc", "guid": "guid", "pubDate": "lastmod"},
    "rdf": {"link": "loc"},
    "atom": {"updated": "lastmod", "published": "published"},
    # an Atom 0.3 feed (root in ATOM03_NS): read as "atom", with its own dates
    "atom03": {"modified": "lastmod", "issued": "published"},
}


def split_name(name: str) -> tuple[str, str]:
    """An expat name (``ns<SEP>local``, or ``local``) as ``(namespace, local name)``."""
    ns, _, local = name.rpartition(SEP)
    return ns, local
