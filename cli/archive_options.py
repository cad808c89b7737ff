"""The archive options of ``crawlkit crawl`` (requisites, excludes), defined apart so
the crawl command takes them with a few lines."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import click
import typer

from crawlkit.crawl.archive import ArchiveOptions, Excludes
from crawlkit.errors import UsageError
from crawlkit.fetch.request_settings import RequestSettings, parse_header, read_cookies, read_netrc
from crawlkit.masking import mask_url
from crawlkit.times import parse_duration

Requisites = Annotated[
    bool,
    typer.Option(
        "--requisites/--no-requisites",
        help="Fetch every page's requisites (images, stylesheets and what they import, "
        "scripts, media, icons) even outside --scope: one hop, never crawled as pages, "
        "robots.txt and politeness as for any URL.",
    ),
]
Exclude = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        help="Refuse URLs this regular expression finds in the canonical URL (repeatable); "
        "the refusal names the pattern.",
        show_default=False,
    ),
]
IgnoreFile = Annotated[
    Path | None,
    typer.Option(
        "--ignore-file",
        help="A file of --exclude patterns, one a line (# comments), read again whenever "
        "it changes while the crawl runs.",
        show_default=False,
    ),
]

Sitemap = Annotated[
    list[str] | None,
    typer.Option(
        "--sitemap",
        help="A sitemap (or sitemap index, text sitemap, feed) to crawl from, fetched "
        "like a seed (repeatable); robots.txt Sitemap lines are followed anyway.",
        show_default=False,
    ),
]

IgnoreRobotsFor = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore-robots-for",
        help="Do not apply robots.txt rules on this exact host (repeatable; no wildcards): "
        "for a site you run. Its robots.txt is still fetched, its Crawl-delay and every "
        "politeness gap still apply; the host is named in each WARC's warcinfo record "
        "and in the report.",
        show_default=False,
    ),
]
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]")


def robots_exceptions(hosts: list[str] | None) -> tuple[str, ...]:
    """The hosts of --ignore-robots-for, lowercased; a pattern or URL is a usage error."""
    out: list[str] = []
    for raw in hosts or []:
        host = raw.strip().lower().rstrip(".")
        if not _HOST.fullmatch(host):
            raise UsageError(
                f"--ignore-robots-for: {raw!r} is not a host name (one exact host, such as "
                "www.example.org; no scheme, port, path or wildcard)"
            )
        out.append(host.strip("[]"))
    return tuple(out)


Header = Annotated[
    list[str] | None,
    typer.Option(
        "--header",
        help="Send this header ('Name: value') with every page request (repeatable).",
        show_default=False,
    ),
]
Cookies = Annotated[
    Path | None,
    typer.Option(
        "--cookies",
        help="Send the cookies of this Netscape cookies.txt (as curl and wget write it) to "
        "the hosts they belong to, and keep the cookies sites set (saved in "
        "STATE/crawl/cookies.txt for the next run). Cookies end up in the WARC request "
        "records.",
        show_default=False,
    ),
]
Netrc = Annotated[
    Path | None,
    typer.Option(
        "--netrc",
        help="HTTP basic auth for the hosts this netrc file names (machine entries only; "
        "never sent to other hosts).",
        show_default=False,
    ),
]


def request_settings(
    headers: list[str] | None,
    cookies: Path | None,
    netrc_file: Path | None,
    state: Path | None = None,
) -> RequestSettings | None:
    """The request settings of the flags and of the config file's host tables. With
    --cookies, the cookies sites set are kept: those a run on ``state`` saved in
    STATE/crawl/cookies.txt are sent again."""
    host_headers: dict[str, list[tuple[str, str]]] = {}
    ctx = click.get_current_context(silent=True)
    hosts = ctx.meta.get("crawlkit.crawl.config.hosts", {}) if ctx is not None else {}
    for host, settings in hosts.items():
        for name, value in (settings.get("headers") or {}).items():
            where = f'[hosts."{host}"] headers'
            host_headers.setdefault(host, []).append(parse_header(f"{name}: {value}", where))
    settings = RequestSettings(
        [parse_header(h) for h in headers or []],
        host_headers=host_headers,
        cookies=read_cookies(cookies) if cookies else (),
        credentials=read_netrc(netrc_file) if netrc_file else None,
        keep_cookies=cookies is not None,
    )
    saved = state / "crawl" / SITE_COOKIES if state is not None else None
    if cookies is not None and saved is not None and saved.exists():
        from crawlkit_cli.app import reporter

        # the crawl's own jar: a bad line is skipped with a warning, never fatal
        for cookie in read_cookies(saved, on_bad=reporter().warn):
            settings.site_cookies[(cookie.domain, cookie.path, cookie.name)] = cookie
    return settings or None


SITE_COOKIES = "cookies.txt"


Proxy = Annotated[
    str | None,
    typer.Option(
        "--proxy",
        help="Send every request through this HTTP proxy (http://HOST:PORT). Targets are "
        "still checked by the network policy; the proxy is an address you allow.",
        show_default=False,
    ),
]
TrustEnv = Annotated[
    bool,
    typer.Option(
        "--trust-env",
        help="Use HTTP_PROXY, HTTPS_PROXY and NO_PROXY from the environment (ignored "
        "without this flag).",
    ),
]


def proxy_url(value: str | None) -> str | None:
    """--proxy checked: an http:// URL with a host (aiohttp speaks to HTTP proxies)."""
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/"):
        shown = mask_url(value)  # never echo a password
        raise UsageError(f"--proxy: {shown!r} is not http://HOST[:PORT] of an HTTP proxy")
    return value


def host_min_delays() -> tuple[tuple[str, float], ...]:
    """(host, seconds) of the config file's ``[hosts."NAME"] min-delay`` settings."""
    ctx = click.get_current_context(silent=True)
    hosts = ctx.meta.get("crawlkit.crawl.config.hosts", {}) if ctx is not None else {}
    out: list[tuple[str, float]] = []
    for host, settings in hosts.items():
        if "min-delay" in settings:
            try:
                out.append((host, parse_duration(settings["min-delay"])))
            except UsageError as exc:
                raise UsageError(f'[hosts."{host}"] min-delay: {exc}') from exc
    return tuple(out)


def archive_options(
    requisites: bool, exclude: list[str] | None, ignore_file: Path | None
) -> ArchiveOptions:
    """The options, checked: a bad pattern or an unreadable ignore file is a usage error."""
    options = ArchiveOptions(
        requisites=requisites, excludes=tuple(exclude or ()), ignore_file=ignore_file
    )
    Excludes(options.excludes, options.ignore_file)  # raises UsageError when bad
    return options
