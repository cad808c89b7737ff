"""The archive options of ``crawlkit crawl`` (requisites, excludes), defined apart so
the crawl command takes them with a few lines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crawlkit.archive import ArchiveOptions, Excludes

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


def archive_options(
    requisites: bool, exclude: list[str] | None, ignore_file: Path | None
) -> ArchiveOptions:
    """The options, checked: a bad pattern or an unreadable ignore file is a usage error."""
    options = ArchiveOptions(
        requisites=requisites, excludes=tuple(exclude or ()), ignore_file=ignore_file
    )
    Excludes(options.excludes, options.ignore_file)  # raises UsageError when bad
    return options
