"""``crawlkit crawl``: the whole loop in one command, as a composition of the stages.

:mod:`crawlkit.crawl.loop` runs it, :mod:`crawlkit.crawl.steps` lists its steps (and
renders ``--explain``); README.md in this package describes the loop and its modules.
"""

from crawlkit.crawl.loop import Crawl, CrawlOptions, CrawlSummary, crawl, explain
from crawlkit.frontier.scope import Scope

__all__ = ["Crawl", "CrawlOptions", "CrawlSummary", "Scope", "crawl", "explain"]
