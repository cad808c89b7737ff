"""What ``crawlkit crawl`` is given: :class:`CrawlOptions`, every knob with its default."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from crawlkit.crawl.archive import ArchiveOptions
from crawlkit.crawl.budget import PageBudget
from crawlkit.fetch.config import DEFAULT_WARC, FetchConfig, WarcOptions
from crawlkit.fetch.netoptions import NetOptions
from crawlkit.frontier.budgets import BudgetPolicy
from crawlkit.frontier.traps import TrapLimits

__all__ = ["CrawlOptions"]


@dataclass
class CrawlOptions:
    """Every knob of ``crawlkit crawl``, with explicit defaults (see the CLI's help)."""

    scope: str = "site"
    # URL rules (canon --rules): default for a search crawl; an archive's are safe, so
    # it fetches and stores each URL as the page links it (replay finds it so)
    rules: str = "default"
    max_pages: int | None = None
    duration: float | None = None
    batch_size: int = 1000
    per_host: int = 4  # URLs of one host per batch handed to the fetcher
    # --per-host given: held exactly; else raised with few hosts queued and a short
    # --min-delay (crawl/feed.py, FEW_HOSTS_PER_HOST)
    per_host_given: bool = False
    jobs: int = 1
    budgets: bool = True
    warc_dir: Path | None = None
    warc: WarcOptions = DEFAULT_WARC  # --warc-size, --warc-prefix, --warc-version
    warc_info: dict[str, str] = field(default_factory=dict)  # operator, isPartOf, ...
    fetch: FetchConfig = field(default_factory=FetchConfig)
    allow_net: tuple[str, ...] = ()
    hosts_file: Path | None = None
    net: NetOptions = field(default_factory=NetOptions)  # --ca-file, --insecure, --dns-server
    limits: TrapLimits = field(default_factory=TrapLimits)
    budget_policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    idle_wait: float = 5.0  # longest sleep while only deferred URLs wait
    # --max-wait: with only deferred URLs left, end the run rather than wait longer
    # than this for the first (None: wait, as long as --for allows)
    max_wait: float | None = None
    recrawl: bool = True
    shard: int | None = None  # crawl only this shard's sites (with shards or slot_map)
    shards: int | None = None
    slot_map: Path | None = None
    archive: ArchiveOptions = field(default_factory=ArchiveOptions)  # requisites, excludes
    timeline: Path | None = None  # the loop's states once a second (crawl/timeline.py)
    # A worker of ``crawl --workers`` (crawlkit.crawl.workers): called when nothing is
    # left, with a "should the run stop" test; waits until its inbox has files (True:
    # go on) or its peers are done too (False: end). None: an empty frontier ends it.
    linger: Callable[[Callable[[], bool]], bool] | None = None
    # A worker of ``crawl --workers``: --max-pages held with the other workers through
    # a shared file (crawlkit.crawl.budget). None: this run's requests alone count.
    page_budget: PageBudget | None = None
    # A worker of ``crawl --workers N``: N. Each worker fetches about 1/N of the
    # crawl's pages, so it cuts its cycles N times as old (crawl/pacing.py): cycles as
    # big per page as one process's, paying post-processing's fixed costs as often.
    workers: int = 1
