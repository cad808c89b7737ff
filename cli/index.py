"""crawlkit index."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import Quiet

from crawlkit import streams
from crawlkit.diag import shown_path
from crawlkit.errors import UsageError
from crawlkit.stages.index import distinct_files, name_clash, repeats_note, write_index


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
    application/warc-fields ones, nor revisits of the server-not-modified profile: a
    304 that pywb would replay as an empty page where the capture it confirms
    should show): the SURT key of WARC-Target-URI as pywb computes it
    (host labels reversed, IP addresses too, "www" dropped, port kept unless the
    default, path and query lowercased, query parameters sorted), the WARC-Date as 14
    digits, then a JSON block with url, mime, status, digest, length, offset and
    filename (the WARC's base name). Lines are sorted as strings, so pywb, a WACZ or
    'wb-manager' can use the file as it is (pywb: put it in the collection's
    indexes/ directory as index.cdxj).

    Odd URIs (dns:, data:, urn:, a URL without a host, a port that is not one) are
    keyed as cdxj-indexer keys them. A record without a WARC-Date, or with one that
    is not a date, and a response, revisit or resource without a WARC-Target-URI are
    errors; a date given to the year, month or day ("2026") is indexed from its
    first second.

    Buffers: at most about 64 MiB of lines are held in memory; more are sorted in
    temporary run files (an external sort, in $TMPDIR) and merged, so memory stays
    bounded whatever the number of captures. A file that is not a WARC, ends inside
    a record (whatever its Content-Length says), has a WARC head over 256 KiB or is
    not gzipped record by record (a record sharing its gzip member with another, or
    spread over two: no offset replay can read) is an error naming it and the record
    (the reader and limits of 'crawlkit extract' and 'crawlkit wacz'), and nothing
    is written. One file named more than once (the same path twice, ./a.warc.gz and
    a symlink to it) is read once, under the name it was first given, and a line on
    stderr says so. Two different files of the same base name (a/x.warc.gz,
    b/x.warc.gz) are an error: their lines would name one file; so is an --out that
    is one of the WARC files. Touches no state.

    Example:

        crawlkit index coll/warc/*.warc.gz -o coll/index.cdxj
    """
    if any(streams.is_stdio(w) for w in warcs):
        # each line names its WARC file, which replay opens by that name
        raise UsageError("a WARC on standard input has no file name for the index to give")
    # a file named twice (a glob given twice, ./a and a symlink to it) would give
    # every line twice, which replay shows as duplicate captures
    kept, repeats = distinct_files(warcs)
    if repeats:
        reporter().warn(repeats_note(repeats))
    if not streams.is_stdio(out) and any(_same_file(out, path) for path in kept):
        # the index is renamed over it when done: the WARC was gone, its index in its place
        raise UsageError(f"the index would replace the WARC file it indexes: {shown_path(out)}")
    clash = name_clash(kept)
    if clash is not None:
        first, second = (shown_path(path) for path in clash)
        raise UsageError(
            f"two WARC files named {Path(first).name!r} ({first}, {second}): an index "
            "line names its WARC by base name, so rename one or index them apart"
        )
    lines = write_index(kept, out)
    if not quiet:
        reporter().info(f"{lines} captures indexed from {len(kept)} WARC files")


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` and ``b`` name one existing file (False when either is missing)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
