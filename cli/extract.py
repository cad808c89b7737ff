"""crawlkit extract."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.fetch_options import AGENT_DEFAULT
from crawlkit_cli.options import Quiet

from crawlkit import streams
from crawlkit.errors import UsageError
from crawlkit.robots import agent_token
from crawlkit.stages.extract import ExtractOptions, WarcSource, extract_warcs
from crawlkit.stages.extract_fetchlog import fetch_log_sources
from crawlkit.times import parse_size
from crawlkit.url import Rules


@app.command("extract")
def extract(
    warcs: Annotated[
        list[str] | None,
        typer.Argument(
            help="WARC files (.warc, .warc.gz per record or whole, .warc.zst); a directory "
            "stands for its *.warc.gz files, in name order (none: no input; its .warc and "
            ".warc.zst files are named in a warning, not read); '-' or none reads stdin.",
            show_default=False,
        ),
    ] = None,
    pages: Annotated[
        str,
        typer.Option(
            "--pages",
            help="Write page records here (default: stdout; .zst or .gz compresses).",
        ),
    ] = "-",
    links: Annotated[
        str | None,
        typer.Option(
            "--links",
            help="Write link records here. Without it no link records are written.",
            show_default=False,
        ),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs", "-j", help="Worker processes that parse, each page under a CPU deadline."
        ),
    ] = 1,
    max_html: Annotated[
        str,
        typer.Option("--max-html", help="Parse at most this much HTML per page (e.g. 5MB)."),
    ] = "5MB",
    max_links: Annotated[
        int, typer.Option("--max-links", help="Keep at most this many links per page.")
    ] = 10_000,
    rules: Annotated[
        Rules,
        typer.Option(
            "--rules",
            help="URL canonicalization rules (see 'crawlkit canon').",
            case_sensitive=False,
        ),
    ] = Rules.DEFAULT,
    requisites: Annotated[
        bool,
        typer.Option(
            "--requisites/--no-requisites",
            help="Write page requisites (images, stylesheets, scripts, media) and the "
            'references of stylesheets as link records with reason "requisite".',
        ),
    ] = True,
    sitemaps: Annotated[
        bool,
        typer.Option(
            "--sitemaps/--no-sitemaps",
            help='Write URL records (reason "sitemap") for robots.txt Sitemap lines and '
            "for the URLs of sitemaps and feeds found in the WARC.",
        ),
    ] = True,
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            help="The crawler's User-Agent (as given to fetch): its first token names "
            "the <meta name=TOKEN> and the 'X-Robots-Tag: TOKEN: ...' directives obeyed "
            "besides those for robots, as robots.txt is matched.",
        ),
    ] = AGENT_DEFAULT,
    fetch_log: Annotated[
        str | None,
        typer.Option(
            "--fetch-log",
            help="Read the WARC records this fetch log's records point to (in "
            "--warc-dir), instead of WARC files: copies of a page or stylesheet first "
            "captured at another URL are parsed from that capture ('-' reads stdin).",
        ),
    ] = None,
    warc_dir: Annotated[
        Path | None,
        typer.Option(
            "--warc-dir",
            help="With --fetch-log: the fetch's WARC directory (its default: STATE/warc).",
        ),
    ] = None,
    quiet: Quiet = False,
) -> None:
    """Turn WARC responses into page records and link records.

    Reads WARC files from any writer (crawlkit, wget, Heritrix, Common Crawl; WARC/1.0
    or 1.1; uncompressed, gzip per record or whole). Parses the HTML responses (HTML
    resource records of http(s) URIs too, pages as archived, as warcit writes them:
    status 200, the record's Content-Type, its block as the body; by
    Content-Type, or by sniffing the bytes when the type is missing or generic; charset
    from the BOM, the header, or <meta>; else UTF-8 when the bytes are valid UTF-8, or
    all but a stray byte in a hundred of the non-ASCII ones; else
    windows-1252, unless windows-1252 cannot explain the bytes and Firefox's detector,
    chardetng, names another encoding that reads them cleanly) with Lexbor, and writes
    one page record per page: url, host, site, fp, depth, status, fetched_at,
    content_type, charset, digest (the WARC-Payload-Digest, or a sha1 of the payload
    when absent), simhash (64-bit, 16 hex digits, over the distinct word 3-shingles of
    the visible text (non-ASCII spaces, punctuation and symbols separate words) without
    script, style, noscript, template, nav, header, footer and aside; digits and the
    names of days and months do not count, so a changed timestamp leaves it as it was),
    title, canonical, noindex, nofollow, links (count), text_bytes (visible text,
    whitespace runs as one space). Link records (only with --links) are URL records
    (depth + 1, priority 1/(depth + 1), halved for nofollow; reason "link"; via) plus
    from, nofollow and tag: from a[href] and area[href] (an empty href is the page
    itself, as browsers have it), link[rel=canonical|alternate|next], frame and iframe
    src, and meta refresh, resolved
    against <base href> and the page's final URL (WARC-Target-URI) with a query's
    non-ASCII characters in the page's encoding, as browsers send them, canonicalized,
    http(s) only, each URL once per page. rel=nofollow and meta robots (or X-Robots-Tag)
    nofollow flag links "nofollow": true; noindex is recorded. <meta name=robots> and
    <meta name=TOKEN> count (TOKEN: --agent's first token); of X-Robots-Tag headers
    (each read on its own), the directives after 'otherbot:' up to the next name are
    otherbot's. A page's depth is the WARC-Crawlkit-Depth header of its record (0 if
    absent).

    Page requisites, what a browser loads to show the page, are link records with
    reason "requisite" (never nofollow; the page record counts them in
    "requisites"): img src and srcset, picture/video/audio source src and srcset,
    link rel=stylesheet, icon, apple-touch-icon, preload (and imagesrcset),
    modulepreload and manifest, script src, video/audio/track src, video poster,
    object data, embed src, input type=image src, SVG image href, background
    attributes, and url() and @import in style attributes and <style> blocks (tag
    "style"). A stylesheet response (text/css, HTTP 200) gives no page record but a
    requisite record per url() (tag "css") and @import (tag "import"), resolved
    against the stylesheet's URL. --no-requisites leaves all of these out.

    Sitemaps in the WARC (--no-sitemaps leaves them out): a robots.txt response
    (HTTP 200 for /robots.txt) gives a record per Sitemap line (reason "sitemap",
    kind "sitemap"); a response whose content is a sitemap, sitemap index, text
    sitemap (absolute URLs, one a line) or RSS/Atom feed gives the records of
    'crawlkit sitemap' (lastmod, priority), with from and via the sitemap's URL; a URL
    on another host than the sitemap's has "cross_host": true and none of the
    sitemap's lastmod, changefreq or priority (a sitemap speaks for its own host):
    it is queued as a link is, if --scope allows.

    Passed over with a count: revisit records, non-200 responses (a 3xx is the
    fetcher's business), bodies that are not HTML. Every page gets its page record.
    One over --max-html or --max-links is parsed up to the cap and marked "capped";
    so is one nested deeper than 128 elements or with a tag of more than 256
    attributes: the excess tags are dropped before parsing ("capped": ["depth"] or
    ["attributes"]). Each page is parsed in a worker process under a CPU deadline
    (0.5 s plus 0.5 s a MB); a page that runs out of it, or whose parse fails, is
    recorded from a bounded scan of its bytes (title and <a href> links) with
    "capped": ["time"] or "error": "...". Capped pages and page errors are reported
    and counted apart. A truncated WARC is reported in one line after the records
    before the damage were written, and the exit status is 1.

    With --fetch-log, the input is a fetch log of 'crawlkit fetch' (fetch records
    pointing into WARC): the records it names are read, in its order, from the files in
    --warc-dir (new/, still being written, or moved up), and a copy of a page or of a
    stylesheet at another URL (a revisit) is parsed from its first capture against its
    own URL, for its links (no page record of its own), as 'crawlkit crawl' does. A
    file the log names and --warc-dir lacks is reported, and the exit status is 1.

    Streams: memory holds a few chunks of responses per worker. Same input, same
    bytes out, for any --jobs (unless a page is near its CPU deadline). Touches no
    state.

    Example:

        crawlkit extract -j 2 crawl.warc.gz --links links.ndjson > pages.ndjson
    """
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if max_links < 1:
        raise UsageError("--max-links must be at least 1")
    if fetch_log is not None and warcs:
        raise UsageError("give WARC files or --fetch-log, not both")
    if (fetch_log is None) != (warc_dir is None):
        raise UsageError("--fetch-log and --warc-dir go together")
    files = _inputs(warcs or ["-"]) if fetch_log is None else [fetch_log]
    streams.check_single_stdin(files)
    if links is not None and streams.is_stdio(links) and streams.is_stdio(pages):
        raise UsageError("--pages and --links cannot both be stdout")
    options = ExtractOptions(
        rules=rules,
        max_html_bytes=parse_size(max_html),
        max_links=max_links,
        requisites=requisites,
        sitemaps=sitemaps,
        agent=agent_token(agent) or "crawlkit",
    )
    rep = reporter()
    sources: Sequence[WarcSource] = files
    originals = None
    missing = 0
    if fetch_log is not None and warc_dir is not None:
        if not warc_dir.is_dir():
            raise UsageError(f"--warc-dir {warc_dir}: no such directory")
        logged = fetch_log_sources(streams.read_records_with_lines([fetch_log], rep), warc_dir, rep)
        sources, originals, missing = logged.ranges, logged.originals, len(logged.missing)
    with contextlib.ExitStack() as stack:
        page_sink = stack.enter_context(streams.open_output(pages))
        link_sink = stack.enter_context(streams.open_output(links)) if links is not None else None
        stats = extract_warcs(
            sources,
            page_sink.write,
            link_sink.write if link_sink is not None else None,
            jobs=jobs,
            options=options,
            reporter=rep,
            originals=originals,
        )
    if not quiet:
        rep.info(stats.summary())
    if stats.damaged_files or missing or rep.input_damaged:
        raise typer.Exit(1)


# WARC files a directory holds that it does not stand for (only *.warc.gz): named on
# stderr, so a directory of wget's or another writer's plain WARCs is not read as empty
# without a word.
_OTHER_WARCS = (".warc", ".warc.zst")


def _inputs(given: list[str]) -> list[str]:
    """The WARC files of the arguments: a directory's ``*.warc.gz`` in name order (so
    ``crawlkit extract DIR`` of a cycle that wrote no WARC file reads nothing and writes
    empty outputs, where an unmatched shell glob would fail). A warning names a
    directory's ``*.warc`` and ``*.warc.zst`` files, which are not read."""
    out: list[str] = []
    for arg in given:
        if not streams.is_stdio(arg) and Path(arg).is_dir():
            out.extend(str(p) for p in sorted(Path(arg).glob("*.warc.gz")))
            _warn_unread(Path(arg))
        else:
            out.append(arg)
    return out


def _warn_unread(directory: Path) -> None:
    others = sorted(p.name for p in directory.iterdir() if p.name.endswith(_OTHER_WARCS))
    if others:
        more = f" and {len(others) - 1} more" if len(others) > 1 else ""
        reporter().warn(
            f"{directory}: {others[0]}{more} not read: a directory stands for its "
            f"*.warc.gz files (name the others as arguments)"
        )
