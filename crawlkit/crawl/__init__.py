"""``crawlkit crawl``: the whole loop in one command, as a composition of the stages.

:mod:`crawlkit.crawl.loop` runs it; :mod:`crawlkit.crawl.waiting` is the one place
where deferred URLs wait for their retry time.
"""

from crawlkit.crawl.loop import Crawl, CrawlOptions, CrawlSummary, crawl, explain
from crawlkit.frontier.scope import Scope

__all__ = ["Crawl", "CrawlOptions", "CrawlSummary", "Scope", "crawl", "explain"]
