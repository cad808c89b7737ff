"""Options shared by several commands, defined once so their help reads the same."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, TypeVar

import typer

from crawlkit.errors import UsageError

T = TypeVar("T")


def renamed(value: T, old_value: T | None, name: str, old_name: str, default: T) -> T:
    """The value of an option that also answers to a hidden old name.

    ``value`` comes from ``name`` (``default`` when not given), ``old_value`` from
    ``old_name`` (None when not given); giving both with different values is a usage
    error, so a script that still says ``old_name`` keeps working and is never
    silently overridden.
    """
    if old_value is None:
        return value
    if value != default and value != old_value:
        raise UsageError(f"{old_name} is the old name of {name}: give one of them")
    return old_value


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
ExistingStateDir = Annotated[
    Path,
    typer.Option(
        "--state",
        help="State directory of a crawl or stage (read only; must exist).",
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
# `crawlkit shard` called the slot map --map; that name still works there, unlisted.
OldSlotMapName = Annotated[Path | None, typer.Option("--map", hidden=True)]
CaFile = Annotated[
    Path | None,
    typer.Option(
        "--ca-file",
        help="Trust the CA certificates in this PEM file as well as the system store "
        "(e.g. the ca.pem of 'crawlkit testweb --tls').",
        show_default=False,
    ),
]
Insecure = Annotated[
    bool,
    typer.Option(
        "--insecure",
        help="Fetch over HTTPS even when a certificate check fails or only an old TLS "
        "version is offered (like wget --no-check-certificate); the fetch record's "
        "tls_unverified and the WARC metadata's tlsUnverified name the failed check.",
    ),
]
DnsServer = Annotated[
    str | None,
    typer.Option(
        "--dns-server",
        help="Ask this DNS server (ADDR:PORT, e.g. 127.0.0.1:5353 or [::1]:53) instead of "
        "the system resolver; record TTLs are kept between 30 s and 1 h.",
        show_default=False,
    ),
]

# -- fetching and archiving: shared by fetch and crawl -----------------------------------
# Politeness and limits are declared once, with their validation (click checks the
# ranges before the command runs), so fetch and crawl accept the same values.
Concurrency = Annotated[
    int,
    typer.Option("--concurrency", min=1, help="Requests in flight at once, over all hosts."),
]
MinDelay = Annotated[
    str,
    typer.Option(
        "--min-delay",
        help="Smallest gap between two requests to one host; the gap is "
        "max(this, --delay-factor × the last fetch time, Crawl-delay).",
    ),
]
DelayFactor = Annotated[
    float,
    typer.Option("--delay-factor", min=0.0, help="Gap multiple of the host's last fetch time."),
]
PerIp = Annotated[
    int,
    typer.Option("--per-ip", min=1, help="Requests at once to one IP address (shared hosting)."),
]
Timeout = Annotated[
    str,
    typer.Option("--timeout", help="Total time per request, silence mid-body included."),
]
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
