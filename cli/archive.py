"""crawlkit archive."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import click
import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.crawl import command_line

from crawlkit.crawl.collection import Collection, package_collection
from crawlkit.errors import UsageError

# What archive decides itself; given again after OUT they would split the collection.
_OWN = ("--state", "--warc-dir")


@app.command(
    "archive",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
def archive_command(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="The site to archive (its first page).")],
    out: Annotated[
        Path,
        typer.Argument(help="The collection directory (made if missing; rerun to resume)."),
    ],
    title: Annotated[
        str | None,
        typer.Option(
            "--title", help="The collection's title (default: Archive of URL).", show_default=False
        ),
    ] = None,
) -> None:
    """Archive one site with everything its pages need: WARC, CDXJ, report, WACZ.

    The archivist's command: crawls URL's registered domain (--scope site) with no
    per-site page budget, each URL as the pages link it (--rules safe: query order,
    session ids and tracking parameters kept, so a replay finds every link), fetching
    every page's requisites (images, stylesheets and what they import, scripts,
    fonts, media) also from other hosts, politely
    (robots.txt, at least 1 s between requests to a host), then writes:

        OUT/warc/            WARC files and index.cdxj (pywb's CDXJ); the last
                             WARC file holds the crawl log, report.json and
                             each page's outlinks
        OUT/report.html      what was captured, what is missing and why, the
        OUT/report.json      politeness audit of the crawl's own fetch log
        OUT/collection.wacz  WARC files, index, page list and both reports,
                             for ReplayWeb.page or pywb (WACZ 1.1.1)
        OUT/state/           the crawl's state directory

    Resumable: run the same command again after a stop (--for, Ctrl-C, kill -9) and
    it continues; the report and WACZ are written again from all WARC files. When
    only deferred URLs are left (a host's 429/503 backoff, a robots.txt that could not
    be had), it waits at most 10 minutes for the first (--max-wait 10m), then ends
    and says when they are due: run it again then. Any
    option of 'crawlkit crawl' may follow OUT and is passed to it (--for 8h,
    --min-delay 2s, --exclude PATTERN, --ignore-file FILE, --allow-net CIDR,
    --proxy, --operator, ...), except --state and --warc-dir, which are OUT's.
    Exit status as crawl's: 1 when nothing at all could be fetched.

    Memory and state as 'crawlkit crawl'; the WACZ step sorts the index and page
    list in bounded memory, as 'crawlkit wacz' does.

    Example:

        crawlkit archive https://example.org/ example-coll --for 8h
    """
    extra = list(ctx.args)
    for arg in extra:
        if arg.split("=", 1)[0] in _OWN:
            raise UsageError(f"{arg.split('=', 1)[0]}: the collection's is OUT/state, OUT/warc")
    collection = Collection(out)
    collection.root.mkdir(parents=True, exist_ok=True)
    crawl_args = [
        url,
        "--state",
        str(collection.state),
        "--scope",
        "site",
        "--rules",
        "safe",
        "--no-budgets",
        # a one-off collection ends rather than sleep an hour on one host's backoff
        "--max-wait",
        "10m",
        "--warc-dir",
        str(collection.warc_dir),
        *extra,  # after ours: a later --scope wins
    ]
    root = ctx.find_root().command
    assert isinstance(root, click.Group)
    crawl = root.get_command(ctx, "crawl")
    assert crawl is not None
    # The crawl command itself, with its own option parsing, checks and summary: the
    # archive cannot drift from it. Its errors end this command the same way.
    crawl.main(args=crawl_args, prog_name="crawlkit crawl", standalone_mode=False)
    if "--explain" in extra:
        return  # the crawl's stage commands were printed; nothing was crawled
    report = package_collection(
        collection,
        title=title or f"Archive of {url}",
        main_url=url,
        info={"command-line": command_line()},
        prefix=_option(extra, "--warc-prefix") or "crawlkit",
        reporter=reporter(),
    )
    missing = (report.get("collection") or {}).get("requisites", {}).get("missing", 0)
    if missing:
        reporter().info(f"{missing} page requisites not captured: the report says why")
    warcs = len(list(collection.warc_dir.glob("*.warc.gz")))
    reporter().info(
        f"{warcs} WARC files in {collection.warc_dir}; report: {collection.report_html}; "
        f"package: {collection.wacz}"
    )


def _option(args: list[str], name: str) -> str | None:
    """The last value of option ``name`` in ``args`` (``--name V`` or ``--name=V``)."""
    value = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg[len(name) + 1 :]
    return value
