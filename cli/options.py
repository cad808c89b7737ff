"""Options shared by several commands, defined once so their help reads the same."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

InputFiles = Annotated[
    list[str] | None,
    typer.Argument(
        help="Input files (NDJSON, optionally zstd or gzip); '-' or none reads stdin.",
        show_default=False,
    ),
]
OutFile = Annotated[
    str,
    typer.Option(
        "--out",
        "-o",
        help="Write records here instead of stdout (.zst or .gz compresses). Written to a "
        "temporary name and renamed when complete.",
    ),
]
StateDir = Annotated[
    Path,
    typer.Option(
        "--state",
        help="State directory (created if missing; locked while in use).",
        show_default=False,
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print no summary on stderr.")]
AllowNet = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-net",
        help="Allow fetching from this CIDR even if it is loopback, private or reserved "
        "(repeatable).",
        show_default=False,
    ),
]
HostsFile = Annotated[
    Path | None,
    typer.Option(
        "--hosts-file",
        help="Resolve names from this /etc/hosts-style file before DNS (as written by "
        "'crawlkit testweb').",
        show_default=False,
    ),
]
Agent = Annotated[
    str,
    typer.Option("--agent", help="User-Agent header; its first token is matched in robots.txt."),
]
Shards = Annotated[
    int | None, typer.Option("--shards", help="Number of shards (an even slot map).")
]
SlotMapFile = Annotated[
    Path | None,
    typer.Option("--slot-map", help="The fleet's slot map file (instead of --shards)."),
]

# -- fetching and archiving: shared by fetch and crawl -----------------------------------
MaxBody = Annotated[
    str, typer.Option("--max-body", help="Body bytes read per response (then truncated).")
]
Backoff = Annotated[
    str,
    typer.Option("--backoff", help="First backoff after 429/503; doubles up to --max-backoff."),
]
MaxBackoff = Annotated[str, typer.Option("--max-backoff", help="Longest backoff step.")]
WarcSize = Annotated[str, typer.Option("--warc-size", help="Start a new WARC file past this size.")]
WarcPrefix = Annotated[str, typer.Option("--warc-prefix", help="WARC file name prefix.")]
Operator = Annotated[
    str | None,
    typer.Option(
        "--operator",
        help="Who runs the crawl (a name and a contact), written in each WARC file's "
        "warcinfo record.",
        show_default=False,
    ),
]
Collection = Annotated[
    str | None,
    typer.Option(
        "--collection",
        help="The collection the WARC files belong to (warcinfo isPartOf).",
        show_default=False,
    ),
]
Description = Annotated[
    str | None,
    typer.Option(
        "--description",
        help="What the crawl is for (warcinfo description).",
        show_default=False,
    ),
]
