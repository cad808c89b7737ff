"""Options shared by several commands, defined once so their help reads the same."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from crawlkit.errors import UsageError

if TYPE_CHECKING:
    from crawlkit.patterns import Excludes

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
# ranges before the command runs), so fetch and crawl accept the same values. Their
# defaults are FetchConfig's and DEFAULT_WARC's, written there once and shown as flag
# text by fetch_options.py (which imports the fetch library, so it is apart: commands
# that do not fetch do not pay for it). --min-delay is declared there, beside its
# default and its check, so the flag reaches the scheduler through 4 files.


Concurrency = Annotated[
    int,
    typer.Option("--concurrency", min=1, help="Requests in flight at once, over all hosts."),
]
DelayFactor = Annotated[
    float,
    typer.Option("--delay-factor", min=0.0, help="Gap multiple of the host's last fetch time."),
]
PerIp = Annotated[
    int,
    typer.Option(
        "--per-ip",
        min=1,
        help="Requests at once to one IP address (shared hosting); an IPv4-mapped IPv6 "
        "address (::ffff:a.b.c.d) counts as its IPv4 address.",
    ),
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
PerIpDelay = Annotated[
    str | None,
    typer.Option(
        "--per-ip-delay",
        help=(
            "Smallest gap from a request's start or end to the next start to one IP"
            " address [default: --min-delay/4]."
        ),
        show_default=False,
    ),
]
IpTableFile = Annotated[
    Path | None,
    typer.Option(
        "--ip-table",
        metavar="FILE",
        help="Share --per-ip limits (concurrency and start gap per IP address) with every "
        "crawlkit process on this machine that names the same FILE.",
        show_default=False,
        dir_okay=False,
    ),
]
MaxDecoded = Annotated[
    str,
    typer.Option("--max-decoded", help="Decoded (gunzipped) bytes per response (gzip bombs)."),
]
WarcVersion = Annotated[
    str, typer.Option("--warc-version", help="WARC format version: 1.1 or 1.0.")
]
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

# -- request settings: shared by fetch and crawl ------------------------------------------
IgnoreRobotsFor = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore-robots-for",
        help="Do not apply robots.txt rules on this exact host (repeatable; no wildcards): "
        "for a site you run. Its robots.txt is still fetched, its Crawl-delay and every "
        "politeness gap still apply; the host is named in each WARC's warcinfo record "
        "and in the report.",
        show_default=False,
    ),
]
Header = Annotated[
    list[str] | None,
    typer.Option(
        "--header",
        help="Send this header ('Name: value') with every page request (repeatable); "
        "not User-Agent (--agent: robots.txt is matched for it), Host or the framing.",
        show_default=False,
    ),
]
Cookies = Annotated[
    Path | None,
    typer.Option(
        "--cookies",
        help="Send the cookies of this Netscape cookies.txt (as curl and wget write it) to "
        "the hosts they belong to, and keep the cookies sites set (saved in "
        "STATE/crawl/cookies.txt for the next run). Cookies end up in the WARC request "
        "records.",
        show_default=False,
    ),
]
Netrc = Annotated[
    Path | None,
    typer.Option(
        "--netrc",
        help="HTTP basic auth for the hosts this netrc file names (machine entries only; "
        "never sent to other hosts).",
        show_default=False,
    ),
]
Proxy = Annotated[
    str | None,
    typer.Option(
        "--proxy",
        help="Send every request through this HTTP proxy (http://HOST:PORT). Targets are "
        "still checked by the network policy; the proxy is an address you allow. A proxy "
        "that cannot be reached or answers 407 stops the run (exit 1): the URLs not fetched "
        "come out deferred, their sites not blamed; a CONNECT it answers with another "
        "status (a 502) is the site's error (error_code proxy-connect).",
        show_default=False,
    ),
]
TrustEnv = Annotated[
    bool,
    typer.Option(
        "--trust-env",
        help="Use HTTP_PROXY, HTTPS_PROXY and NO_PROXY from the environment (ignored "
        "without this flag).",
    ),
]

# -- URL patterns: shared by crawl, seen-merge and frontier add/next ----------------------
ScopeOption = Annotated[
    str | None,
    typer.Option(
        "--scope",
        help="Follow links only on the seeds' hosts (host) or registered domains (site), "
        "anywhere (any), or to URLs a regular expression (RE2 syntax) finds; the others are "
        "refused out-of-scope, before they are marked seen. Seeds widen it, and so do their "
        "redirect targets (http://a.org/ moved to https://www.a.org/).",
    ),
]
Exclude = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        help="Refuse URLs this regular expression finds in the canonical URL (repeatable; "
        "RE2 syntax, linear time); the refusal names the pattern.",
        show_default=False,
    ),
]
IgnoreFile = Annotated[
    Path | None,
    typer.Option(
        "--ignore-file",
        help="A file of --exclude patterns, one a line (# comments), read again whenever "
        "it changes while the command runs.",
        show_default=False,
    ),
]
URL_LENGTH_DEFAULT = 2000  # crawlkit.patterns.MAX_URL_LENGTH; a test holds them equal
MaxUrlLength = Annotated[
    int,
    typer.Option(
        "--max-url-length",
        min=1,
        help="Refuse longer URLs (characters), before any pattern runs on them.",
    ),
]

MaxDepth = Annotated[
    int,
    typer.Option(
        "--max-depth",
        min=0,
        help="Refuse URLs more link hops than this from a seed (0: no limit); a page "
        "requisite is exempt (its own hop limit applies).",
    ),
]
MAX_DEPTH_DEFAULT = 20  # TrapLimits' too (frontier/traps.py); a test holds them equal

# -- archive: crawl's own -----------------------------------------------------------------
Requisites = Annotated[
    bool,
    typer.Option(
        "--requisites/--no-requisites",
        help="Fetch every page's requisites (images, stylesheets and what they import, "
        "scripts, media, icons) even outside --scope: one hop, never crawled as pages, "
        "robots.txt and politeness as for any URL.",
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
TimelineFile = Annotated[
    Path | None,
    typer.Option(
        "--timeline",
        help="Append the crawl loop's states once a second to this plain NDJSON file (in "
        "flight, held, queued, post-processing backlog, refills), for finding stalls. "
        "With --workers N each worker appends to a file of its own, the name with -wK "
        "before the suffix (t.ndjson: t-w0.ndjson, t-w1.ndjson, ...).",
        show_default=False,
    ),
]


def excludes(
    exclude: list[str] | None, ignore_file: Path | None, max_url_length: int = URL_LENGTH_DEFAULT
) -> Excludes | None:
    """--exclude and --ignore-file, checked (a bad pattern or an unreadable ignore file
    is a usage error before any input is read); None when neither was given."""
    from crawlkit.patterns import Excludes  # imported by the commands that match URLs

    found = Excludes(exclude or (), ignore_file, max_url_length=max_url_length)
    return found if found else None


def warc_info(operator: str | None, collection: str | None, description: str | None) -> dict:
    """The warcinfo fields the user gave (WARC 1.1 section 10.1 names)."""
    fields = {"operator": operator, "isPartOf": collection, "description": description}
    return {k: v for k, v in fields.items() if v}
