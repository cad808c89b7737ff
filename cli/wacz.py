"""crawlkit wacz."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import Quiet

from crawlkit.diag import shown_path
from crawlkit.errors import UsageError
from crawlkit.stages.index import distinct_files, repeats_note
from crawlkit.stages.wacz import archive_names, write_wacz


@app.command("wacz")
def wacz(
    warcs: Annotated[
        list[Path],
        typer.Argument(help="WARC files (.warc or .warc.gz) to package.", show_default=False),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="The WACZ file to write (ends in .wacz).", show_default=False
        ),
    ],
    title: Annotated[
        str | None,
        typer.Option(
            "--title", help="The collection's title (datapackage.json).", show_default=False
        ),
    ] = None,
    description: Annotated[
        str | None,
        typer.Option("--description", help="A description (datapackage.json).", show_default=False),
    ] = None,
    main_url: Annotated[
        str | None,
        typer.Option(
            "--main-url",
            help="The page a replay opens first (default: the first page captured).",
            show_default=False,
        ),
    ] = None,
    report: Annotated[
        list[Path] | None,
        typer.Option(
            "--report",
            help="A file to carry under reports/ (the crawl report, the "
            "politeness audit; repeatable).",
            show_default=False,
        ),
    ] = None,
    quiet: Quiet = False,
) -> None:
    """Package WARC files as a WACZ 1.1.1 file that replay tools load as it is.

    Writes a ZIP with archive/ (the WARC files, stored uncompressed so a reader can
    seek into them), indexes/index.cdx (their CDXJ index, as 'crawlkit index' writes
    it; above 100,000 lines a compressed ZipNum index instead, indexes/index.cdx.gz
    and indexes/index.idx, as py-wacz writes it, which replay tools read a block at
    a time), pages/pages.jsonl (a header line, then one line per page with id, url,
    ts, title and text, the page's visible text for full-text search: the HTTP 200
    HTML responses and HTML resource records of http(s) URIs, as warcit writes them
    (a URL again when its content changed), and their copies at other
    URLs stored as revisits, with the page's title and no text, in capture order),
    reports/ (the files given with --report; one
    named like a Frictionless descriptor, such as report.json, is stored as
    report.data.json so validators do not misread it), datapackage.json (every file
    with its size and sha256, the title, created, wacz_version 1.1.1) and
    datapackage-digest.json (the sha256 of datapackage.json). ReplayWeb.page opens
    it (a test checks every page and requisite); 'wacz validate' accepts it. ZIP64
    fields are written only for a member or offset of 4 GiB or more.

    A WARC keeps its base name under archive/; bytes of the name that are not UTF-8
    are written as %XX, and a name equal to an earlier one but for case gets -2, -3
    before its .warc. One file named more than once (the same path twice, ./a.warc.gz
    and a symlink to it) is read once, as 'crawlkit index' does, and a line on stderr
    says so.

    Streams the WARC bytes; the index and the page list are sorted in bounded memory
    (an external sort, with temporary files beside the output). Written to a
    temporary name and renamed when complete. Touches no state.

    Example:

        crawlkit wacz coll/warc/*.warc.gz -o coll.wacz --title "Example, Dec 2026"
    """
    if out.suffix != ".wacz":
        raise UsageError("--out must end in .wacz")
    # one file named twice (a glob given twice, ./a and a symlink to it): read once,
    # as index does (its captures and pages would be in the package twice)
    kept, repeats = distinct_files(warcs)
    if repeats:
        reporter().warn(repeats_note(repeats))
    warcs = [Path(w) for w in kept]
    package = write_wacz(
        warcs, out, title=title, description=description, main_url=main_url, reports=report or []
    )
    if not quiet:
        for path, name in zip(warcs, archive_names(warcs), strict=True):
            if name != path.name:
                shown = shown_path(path.name)
                reporter().info(f"{shown}: stored as archive/{name}")
        size = out.stat().st_size
        reporter().info(
            f"{out}: {len(warcs)} WARC files, {len(package['resources'])} files, {size} bytes"
        )
