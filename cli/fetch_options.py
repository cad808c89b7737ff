"""The values of the fetch options, checked, and their defaults as flag text: one
builder, :func:`fetch_config`, for ``fetch`` and ``crawl``. The options are declared in
:mod:`crawlkit_cli.options`, but for ``--min-delay``, declared here. Apart from
``options.py`` because it imports the fetch library."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import click
import typer
from crawlkit_cli.config_option import value_origin

from crawlkit.errors import UsageError
from crawlkit.fetch.config import DEFAULT_WARC, FetchConfig, WarcOptions
from crawlkit.fetch.request_settings import RequestSettings, parse_header, read_cookies, read_netrc
from crawlkit.masking import mask_url
from crawlkit.times import parse_duration, parse_size
from crawlkit.warc.write import check_warc_prefix


def _seconds_text(seconds: float) -> str:
    for unit, size in (("h", 3600.0), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _bytes_text(size: int) -> str:
    for unit, base in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= base and size % base == 0:
            return f"{size // base}{unit}"
    return str(size)


_FETCH = FetchConfig()
AGENT_DEFAULT = _FETCH.agent
CONCURRENCY_DEFAULT = _FETCH.concurrency
MIN_DELAY_DEFAULT = _seconds_text(_FETCH.min_delay)
# Declared here rather than in options.py, beside its default and its check
# (fetch_config), so the flag travels: this module -> cli/fetch.py | cli/crawl.py ->
# FetchConfig (crawlkit/fetch/config.py) -> the scheduler that reads it.
MinDelay = Annotated[
    str,
    typer.Option(
        "--min-delay",
        help="Smallest gap between two requests to one host; the gap is "
        "max(this, --delay-factor × the last fetch time, Crawl-delay).",
    ),
]
DELAY_FACTOR_DEFAULT = _FETCH.delay_factor
PER_IP_DEFAULT = _FETCH.per_ip
TIMEOUT_DEFAULT = _seconds_text(_FETCH.timeout)
MAX_BODY_DEFAULT = _bytes_text(_FETCH.max_body)
MAX_DECODED_DEFAULT = _bytes_text(_FETCH.max_decoded)
BACKOFF_DEFAULT = _seconds_text(_FETCH.backoff)
MAX_BACKOFF_DEFAULT = _seconds_text(_FETCH.max_backoff)
WARC_SIZE_DEFAULT = _bytes_text(DEFAULT_WARC.size)
WARC_PREFIX_DEFAULT = DEFAULT_WARC.prefix
WARC_VERSION_DEFAULT = DEFAULT_WARC.version

_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]")
#: Where the cookies sites set are kept between runs (--cookies), for fetch and crawl.
SITE_COOKIES = Path("crawl") / "cookies.txt"


def duration(text: str, flag: str) -> float:
    """Seconds of a duration flag; a bad or negative one is a usage error naming
    ``flag`` (or the config file line that gave it)."""
    try:
        value = parse_duration(text)
    except UsageError as exc:
        raise UsageError(f"{value_origin(flag)}: {exc}") from None
    if value < 0:
        raise UsageError(f"{value_origin(flag)} must not be negative")
    return value


def byte_size(text: str, flag: str) -> int:
    """Bytes of a size flag (10MB); a bad one is a usage error naming ``flag`` (or the
    config file line that gave it)."""
    try:
        return parse_size(text)
    except UsageError as exc:
        raise UsageError(f"{value_origin(flag)}: {exc}") from None


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


def _config_hosts() -> dict[str, dict[str, object]]:
    """The ``[hosts."NAME"]`` tables of --config (see config_option.py), or none."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get("crawlkit.crawl.config.hosts", {}) if ctx is not None else {}


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
    for host, given in _config_hosts().items():
        table = given.get("headers") or {}
        assert isinstance(table, dict)
        for name, value in table.items():
            where = f'[hosts."{host}"] headers'
            host_headers.setdefault(host, []).append(parse_header(f"{name}: {value}", where))
    settings = RequestSettings(
        [parse_header(h) for h in headers or []],
        host_headers=host_headers,
        cookies=read_cookies(cookies) if cookies else (),
        credentials=read_netrc(netrc_file) if netrc_file else None,
        keep_cookies=cookies is not None,
    )
    if cookies is not None and state is not None:
        from crawlkit_cli.app import reporter

        # the state's own jar: a bad line is skipped with a warning, never fatal
        settings.load(state / SITE_COOKIES, reporter().warn)
    return settings or None


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
    out: list[tuple[str, float]] = []
    for host, settings in _config_hosts().items():
        if "min-delay" in settings:
            try:
                out.append((host, parse_duration(str(settings["min-delay"]))))
            except UsageError as exc:
                raise UsageError(f'[hosts."{host}"] min-delay: {exc}') from exc
    return tuple(out)


def fetch_config(
    *,
    state: Path | None,
    agent: str,
    concurrency: int,
    min_delay: str,
    delay_factor: float,
    per_ip: int,
    per_ip_delay: str | None,
    timeout: str,
    max_body: str,
    max_decoded: str,
    backoff: str,
    max_backoff: str,
    ignore_robots_for: list[str] | None,
    header: list[str] | None,
    cookies: Path | None,
    netrc: Path | None,
    proxy: str | None,
    trust_env: bool,
    run_for: str | None = None,
    ip_table: Path | None = None,
) -> FetchConfig:
    """The :class:`FetchConfig` of the fetch options as given: one builder, so
    ``crawlkit fetch`` and ``crawlkit crawl`` check and mean the same values."""
    return FetchConfig(
        agent=agent,
        concurrency=concurrency,
        min_delay=duration(min_delay, "--min-delay"),
        delay_factor=delay_factor,
        per_ip=per_ip,
        per_ip_delay=None if per_ip_delay is None else duration(per_ip_delay, "--per-ip-delay"),
        duration=None if run_for is None else duration(run_for, "--for"),
        timeout=duration(timeout, "--timeout"),
        max_body=byte_size(max_body, "--max-body"),
        max_decoded=byte_size(max_decoded, "--max-decoded"),
        backoff=duration(backoff, "--backoff"),
        max_backoff=duration(max_backoff, "--max-backoff"),
        ignore_robots_for=robots_exceptions(ignore_robots_for),
        request=request_settings(header, cookies, netrc, state),
        host_min_delay=host_min_delays(),
        proxy=proxy_url(proxy),
        trust_env=trust_env,
        ip_table=None if ip_table is None else str(ip_table),
    )


def save_site_cookies(config: FetchConfig, state: Path) -> None:
    """Keep the cookies sites set during the run (--cookies) for the next run on ``state``."""
    if config.request is not None and config.request.keep_cookies:
        path = state / SITE_COOKIES
        path.parent.mkdir(parents=True, exist_ok=True)
        config.request.save(path)


def warc_options(size: str, prefix: str, version: str) -> WarcOptions:
    """--warc-size, --warc-prefix and --warc-version, checked (one builder for fetch and
    crawl)."""
    if version not in ("1.0", "1.1"):
        raise UsageError("--warc-version must be 1.1 or 1.0")
    return WarcOptions(
        size=byte_size(size, "--warc-size"), prefix=check_warc_prefix(prefix), version=version
    )
