"""The archive options of ``crawlkit crawl``: declared in :mod:`crawlkit_cli.options`
(with the request settings, which ``fetch`` takes too) and named here as well, so a
command that imports them from here keeps working."""

from __future__ import annotations

from pathlib import Path

from crawlkit_cli.fetch_options import (
    SITE_COOKIES,
    host_min_delays,
    proxy_url,
    request_settings,
    robots_exceptions,
)
from crawlkit_cli.options import (
    Cookies,
    Exclude,
    Header,
    IgnoreFile,
    IgnoreRobotsFor,
    Netrc,
    Proxy,
    Requisites,
    Sitemap,
    TrustEnv,
    excludes,
)

from crawlkit.crawl.archive import ArchiveOptions

__all__ = [
    "SITE_COOKIES",
    "Cookies",
    "Exclude",
    "Header",
    "IgnoreFile",
    "IgnoreRobotsFor",
    "Netrc",
    "Proxy",
    "Requisites",
    "Sitemap",
    "TrustEnv",
    "archive_options",
    "excludes",
    "host_min_delays",
    "proxy_url",
    "request_settings",
    "robots_exceptions",
]


def archive_options(
    requisites: bool, exclude: list[str] | None, ignore_file: Path | None
) -> ArchiveOptions:
    """The options, checked: a bad pattern or an unreadable ignore file is a usage error."""
    options = ArchiveOptions(
        requisites=requisites, excludes=tuple(exclude or ()), ignore_file=ignore_file
    )
    excludes(list(options.excludes), options.ignore_file)  # raises UsageError when bad
    return options
