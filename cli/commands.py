"""Imports every command module so each registers itself on the app.

The order here is the order of ``crawlkit --help``: the stages in pipeline order,
then the whole-crawl commands, then the tools.
"""

from crawlkit_cli import (  # noqa: F401
    canon,
    robots,
    sitemap,
    frontier,
    fetch,
    extract,
    dedup,
    seen_merge,
    recrawl,
    shard,
    crawl,
    demo,
    testweb,
    audit,
)
