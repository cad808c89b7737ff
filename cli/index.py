"""crawlkit index."""

from __future__ import annotations

from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import Quiet

from crawlkit.stages.index import write_index


@app.command("index")
def index(
    warcs: Annotated[
        list[str],
        typer.Argument(help="WARC files (.warc or .warc.gz) to index.", show_default=False),
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out",
            "-o",
            help="Write the index here instead of stdout (written to a temporary name and "
            "renamed when complete).",
        ),
    ] = "-",
    quiet: Quiet = False,
) -> None:
    """Write a CDXJ index of WARC files, SURT-sorted, as pywb and cdxj-indexer write it.

    One line per capture (response, revisit, resource and metadata records, but not
    application/warc-fields ones): the SURT key of WARC-Target-URI as pywb computes it
    (host labels reversed, IP addresses too, "www" dropped, port kept unless the
    default, path and query lowercased, query parameters sorted), the WARC-Date as 14
    digits, then a JSON block with url, mime, status, digest, length, offset and
    filename (the WARC's base name). Lines are sorted as strings, so pywb, a WACZ or
    'wb-manager' can use the file as it is (pywb: put it in the collection's
    indexes/ directory as index.cdxj).

    Buffers: every line is held and sorted in memory (about 250 bytes a capture).
    A file that is not a WARC, or ends in the middle of a record, is an error naming
    it, and nothing is written. Touches no state.

    Example:

        crawlkit index coll/warc/*.warc.gz -o coll/index.cdxj
    """
    lines = write_index(warcs, out)
    if not quiet:
        reporter().info(f"{lines} captures indexed from {len(warcs)} WARC files")
