"""Imports every command module so each registers itself on the app, in help order."""

import crawlkit_cli.robots
import crawlkit_cli.sitemap  # noqa: F401
from crawlkit_cli import canon, shard  # noqa: F401
from crawlkit_cli import frontier  # noqa: F401
from crawlkit_cli import recrawl  # noqa: F401
from crawlkit_cli import seen_merge  # noqa: F401
from crawlkit_cli import testweb  # noqa: F401
from crawlkit_cli import fetch  # noqa: F401
from crawlkit_cli import dedup, extract  # noqa: F401
from crawlkit_cli import audit  # noqa: F401
