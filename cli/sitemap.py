"""crawlkit sitemap."""

from __future__ import annotations

from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import OutFile, Quiet

from crawlkit import streams
from crawlkit.errors import InvalidURL, UsageError
from crawlkit.sitemap.parse import DEFAULT_PRIORITY, MAX_SITEMAP_URLS
from crawlkit.stages.sitemap import SitemapRun, read_sitemaps
from crawlkit.times import parse_size
from crawlkit.url import Canonicalizer


@app.command("sitemap")
def sitemap(
    files: Annotated[
        list[str] | None,
        typer.Argument(
            help="Sitemap documents (XML, text, RSS or Atom; gzip or zstd detected); '-' or "
            "none reads stdin.",
            show_default=False,
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help='The sitemap\'s own URL: records carry it as "via", and relative links in '
            "RSS and Atom feeds resolve against it, after the feed's own xml:base (sitemaps "
            "need absolute URLs).",
            show_default=False,
        ),
    ] = None,
    default_priority: Annotated[
        float,
        typer.Option("--default-priority", help="Priority of URLs without <priority>."),
    ] = DEFAULT_PRIORITY,
    max_urls: Annotated[
        int, typer.Option("--max-urls", help="URLs taken from one file (protocol limit).")
    ] = MAX_SITEMAP_URLS,
    max_bytes: Annotated[
        str,
        typer.Option(
            "--max-bytes",
            help="Uncompressed bytes read from one file (protocol limit: 50MiB, 52,428,800 bytes).",
        ),
    ] = "50MiB",
    same_host: Annotated[
        bool,
        typer.Option(
            "--same-host",
            help="Skip (and report) URLs on another host than --base. (The sitemap "
            "protocol also wants them under the sitemap's directory and scheme, which "
            "is not checked. A crawl keeps another host's URLs as links, without the "
            "sitemap's lastmod and priority.)",
        ),
    ] = False,
    vouched_hosts: Annotated[
        list[str] | None,
        typer.Option(
            "--vouched-host",
            help="With --same-host, keep URLs of HOST too: a host whose robots.txt names "
            "--base in a Sitemap: line (the protocol's cross-submission; checking that "
            "robots.txt is the caller's part). Repeatable.",
            metavar="HOST",
            show_default=False,
        ),
    ] = None,
    out: OutFile = "-",
    quiet: Quiet = False,
) -> None:
    """Turn sitemaps (XML, index, text, RSS, Atom; gzip) into URL records.

    Reads sitemap documents; the format is recognised from the content. A text
    sitemap is UTF-8, or UTF-16 when it starts with a byte order mark. Writes one URL
    record a line: {"url" (canonical), "host", "site", "fp", "depth": 0, "priority",
    "reason": "sitemap"} plus "lastmod" (UTC, 2024-05-01T00:00:00Z) and "changefreq"
    when given, and "via" with --base. Children of a sitemap index come out as records
    with "kind": "sitemap" and their lastmod, so a pipeline can fetch the changed ones.
    A <url>'s hreflang alternates (<xhtml:link rel="alternate" hreflang="de"
    href="..."/>) are URLs to crawl too, under the same rules (absolute, --same-host,
    the limits), and each URL once a file, though every <url> of a language cluster
    repeats the whole cluster: an alternate the file also lists as a <loc> comes out
    as that <loc> (its lastmod, changefreq, priority), the others at the end of the
    file (default priority, no lastmod).

    Protocol limits: 50,000 URLs and 50 MiB uncompressed per file; records up to the
    limit are written and the rest is counted and reported. Invalid URLs are reported
    with their line and skipped. Hostile XML (entity declarations, external entities,
    nesting deeper than 64) and malformed XML end that file with an error (records
    before the damage are kept) and the exit status 1; the other files are still read.
    An external parameter entity declared and never referenced (Drupal's feeds) is
    let be: it is never loaded. Text after the document's end (a PHP warning printed
    after the feed) is skipped and reported; the file is whole. A bare & (one that
    begins no reference: "?a=1&b=2", "Tom & Jerry") is read as &amp;, as search
    engines and feed readers read it, and counted in a warning.

    Streams: memory stays flat however large the file, but for the hreflang
    alternates it has not yet listed as a <loc>, kept to its end (their URLs, at most
    the 50,000). Touches no state.

    Example:

        crawlkit sitemap --base https://example.com/sitemap.xml sitemap.xml.gz > urls.ndjson
    """
    rep = reporter()
    limit = parse_size(max_bytes)
    if max_urls < 0 or limit < 0:
        raise UsageError("--max-urls and --max-bytes must not be negative")
    if not 0.0 <= default_priority <= 1.0:
        raise UsageError("--default-priority must be between 0.0 and 1.0")
    canon = Canonicalizer()
    via = None
    if base is not None:
        try:
            via = canon.canonicalize(base)
        except InvalidURL as exc:
            raise UsageError(f"--base: {exc}") from exc
    if same_host and via is None:
        raise UsageError("--same-host needs --base (the sitemap's own URL)")
    if vouched_hosts and not same_host:
        raise UsageError("--vouched-host needs --same-host (without it no host is skipped)")
    vouched = [_host(canon, name) for name in vouched_hosts or ()]
    inputs = list(files) if files else ["-"]
    streams.check_single_stdin(inputs)
    run = SitemapRun()
    with streams.open_output(out) as sink:
        records = read_sitemaps(
            inputs,
            run,
            rep,
            base=via,
            canonicalizer=canon,
            max_urls=max_urls,
            max_bytes=int(limit),
            default_priority=default_priority,
            same_host=same_host,
            vouched_hosts=vouched,
        )
        for record in records:
            sink.write_record(record)
    total, failed = run.total, run.failed
    if not quiet:
        rep.info(
            f"{len(inputs)} file(s): {total.urls} URLs, {total.sitemaps} sitemaps, "
            f"{total.invalid} invalid and {total.foreign} foreign skipped, "
            f"{total.over_limit} beyond the limit, "
            f"{failed} failed"
        )
    if failed:
        raise typer.Exit(1)


def _host(canon: Canonicalizer, name: str) -> str:
    """``name`` (``host`` or ``host:port``) as URL records spell a host."""
    try:
        return canon.parse(f"http://{name.strip()}/").host
    except InvalidURL as exc:
        raise UsageError(f"--vouched-host {name!r}: not a host name ({exc})") from exc
