"""The knobs of a fetch run (:class:`FetchConfig`), of its WARC files
(:class:`WarcOptions`) and the default User-Agent: each default is written here once
(the CLI shows these as its defaults; ``crawlkit crawl`` passes them on whole).

Kept apart from :mod:`crawlkit.fetch.engine` so that the parts the engine composes
(the robots flow, the host table) read the same record without importing the engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crawlkit.masking import mask_url
from crawlkit.warc.write import DEFAULT_WARC, WarcOptions

__all__ = [
    "DEADLINE_GRACE",
    "DEFAULT_AGENT",
    "DEFAULT_WARC",
    "FetchConfig",
    "WarcOptions",
    "robots_field",
]

# The User-Agent of fetch and crawl unless --agent says otherwise; robots.txt groups
# are matched by its product token, "crawlkit". No contact URL: it named a repository
# of another project called CrawlKit, where a site's operator found nobody to ask. An
# operator's crawl names its own (`--agent 'mybot/1.0 (+https://example.org/bot)'`).
DEFAULT_AGENT = "crawlkit/0.1"


# A request in flight when the run's time is up (--for, a signal) gets at most this long
# past the deadline; one cut short by it comes out deferred ("stopped") to be asked
# again by the next run (a robots.txt gives no verdict), so a slow or stalled server
# cannot hold a cron slot open for the whole --timeout.
DEADLINE_GRACE = 3.0


@dataclass
class FetchConfig:
    """Every knob of a fetch run, with docs/design.md's defaults ("Numbers")."""

    agent: str = DEFAULT_AGENT
    concurrency: int = 100
    min_delay: float = 1.0
    delay_factor: float = 10.0
    per_ip: int = 2
    per_ip_delay: float | None = None  # default: min_delay / 4
    duration: float | None = None
    timeout: float = 30.0
    max_body: int = 10_000_000
    max_decoded: int = 10_000_000
    backoff: float = 60.0
    max_backoff: float = 3600.0
    max_hops: int = 5
    archive_robots: bool = True
    # Exact host names whose robots.txt is fetched (and its Crawl-delay kept) but whose
    # rules are not applied: an operator archiving a site they run.
    ignore_robots_for: tuple[str, ...] = ()
    # Headers to add per URL (crawlkit.fetch.request_settings.RequestSettings: --header,
    # --cookies, --netrc); page requests only, robots.txt is asked for without them.
    request: Any = None
    host_min_delay: tuple[tuple[str, float], ...] = ()  # (host name, seconds): overrides
    proxy: str | None = None  # every request through this HTTP proxy (--proxy)
    trust_env: bool = False  # HTTP(S)_PROXY / NO_PROXY from the environment (--trust-env)
    # A file shared with other crawlkit processes on this machine: per_ip and
    # per_ip_delay then hold across all of them (crawlkit.fetch.iptable, --ip-table).
    ip_table: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The knobs as they may be shown or stored (settings.json, the report, warcinfo):
        the proxy's userinfo masked (docs/design.md invariant 9); ``request`` keeps its own
        ``to_json``, which shows no secret either."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["proxy"] = mask_url(self.proxy) if self.proxy else self.proxy
        return out


def robots_field(ignore_robots_for: Sequence[str]) -> str:
    """The ``robots`` field of a WARC file's warcinfo: ``obey``, and the hosts whose
    robots.txt the run ignored (``--ignore-robots-for``)."""
    if not ignore_robots_for:
        return "obey"
    return "obey, except for " + " ".join(ignore_robots_for)
