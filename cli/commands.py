"""The table of ``crawlkit`` commands, read without importing any of them.

Each entry names the module under ``crawlkit_cli`` that registers the command on the
app (``@app.command(...)`` or ``app.add_typer(...)``) and the command's one-line
summary, the first sentence of its help. ``crawlkit --help`` is printed from this
table, and ``crawlkit NAME`` imports only NAME's module, so a command does not pay
for the libraries of the others (numpy, aiohttp, warcio, ...).

The order here is the order of ``crawlkit --help``: the stages in pipeline order,
then the whole-crawl commands and the tools, then the two command groups, last, as
typer itself lists groups.

To add a command: create ``cli/<module>.py`` that registers it, and add one line
here. ``tests/cli/test_cli.py`` fails if a registered command is missing from the table
or a summary differs from the command's help.
"""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    module: str  # crawlkit_cli.<module> registers the command when imported
    summary: str  # the first sentence of the command's help, as --help shows it


COMMANDS: dict[str, Entry] = {
    "canon": Entry(
        "canon", "Canonicalize URLs: one canonical URL (or JSON record) per input line."
    ),
    "sitemap": Entry(
        "sitemap", "Turn sitemaps (XML, index, text, RSS, Atom; gzip) into URL records."
    ),
    "fetch": Entry(
        "fetch", "Fetch URL records politely into WARC files; one fetch record per input URL."
    ),
    "extract": Entry("extract", "Turn WARC responses into page records and link records."),
    "dedup": Entry(
        "dedup", "Find exact and near duplicate pages: one dedup record per page record."
    ),
    "seen-merge": Entry(
        "seen_merge",
        "Pass on only URLs never seen before, and remember them (Bloom filter + exact set).",
    ),
    "recrawl": Entry(
        "recrawl", "Keep each URL's change history and print URL records for URLs worth a visit."
    ),
    "shard": Entry(
        "shard", "Split a record stream by registered-domain hash slot into N shard files."
    ),
    "index": Entry(
        "index",
        "Write a CDXJ index of WARC files, SURT-sorted, as pywb and cdxj-indexer write it.",
    ),
    "wacz": Entry(
        "wacz", "Package WARC files as a WACZ 1.1.1 file that replay tools load as it is."
    ),
    "archive": Entry(
        "archive",
        "Archive one site with everything its pages need: WARC, CDXJ, report, WACZ.",
    ),
    "crawl": Entry(
        "crawl",
        "Crawl from seeds until the frontier is empty or a limit is reached; resumable.",
    ),
    "demo": Entry(
        "demo",
        "Crawl a synthetic web on loopback, audit the crawl, write a report (about a minute).",
    ),
    "report": Entry(
        "report", "Summarize a crawl: JSON on stdout, optionally an HTML page with plots."
    ),
    "testweb": Entry("testweb", "Serve a synthetic web on loopback, hostile parts included."),
    "audit": Entry(
        "audit",
        "Audit a crawl's politeness from a server's request log (or crawlkit's fetch log).",
    ),
    "robots": Entry(
        "robots", "robots.txt by RFC 9309: check URLs against a file, or show how it parses."
    ),
    "frontier": Entry(
        "frontier",
        "Priority queues of URLs to fetch: trap limits, site budgets, durable batches.",
    ),
}
