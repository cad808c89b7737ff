"""crawlkit robots: check URLs against a robots.txt, or show how a file parses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import orjson
import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import OutFile

from crawlkit import streams
from crawlkit.errors import UsageError
from crawlkit.robots import RobotsTxt, rules_for_status
from crawlkit.stages.robots import check_lines, read_robots

robots_app = typer.Typer(
    help="robots.txt by RFC 9309: check URLs against a file, or show how it parses.\n\n"
    "Run 'crawlkit robots COMMAND --help' for one command.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
app.add_typer(robots_app, name="robots")


@robots_app.command("check")
def check(
    urls: Annotated[
        list[str] | None,
        typer.Argument(
            help="URLs (absolute, or a path starting with / and any query) to check; "
            "none reads them from stdin, one a line.",
            show_default=False,
        ),
    ] = None,
    robots: Annotated[
        str | None,
        typer.Option(
            "--robots",
            help="The robots.txt file ('-' reads stdin; then URLs must be arguments). Required.",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Product token or User-Agent header of the crawler; "
            "its leading token (FooBot/1.2 → foobot) selects the group. Required.",
            show_default=False,
        ),
    ] = None,
    status: Annotated[
        int,
        typer.Option(
            "--status",
            help="HTTP status robots.txt was fetched with. 2xx: its "
            "rules; 3xx (too many redirects) and 4xx except 429: all allowed; "
            "429 and 5xx: all disallowed.",
        ),
    ] = 200,
    out: OutFile = "-",
) -> None:
    """Check URLs against a robots.txt by RFC 9309: one verdict a line.

    Reads the robots.txt given with --robots (first 512 KiB) and URLs from the
    arguments (an empty one is the path /) or stdin, one a line (blank lines
    skipped). Writes one NDJSON object per URL, in order: {"url", "allowed",
    "rule"}, where "rule" is the deciding line (as "Disallow: /private/") or null
    when no rule matched or the status decided. The longest matching pattern wins,
    Allow wins a tie, /robots.txt is always allowed.
    An input line that is a JSON record with a "url" (from crawlkit sitemap, say)
    comes out as that record plus "allowed" and "rule". A URL that is neither
    absolute nor a path starting with / (example.com/x: no scheme) is reported
    and answered "allowed": false with an "error", not matched as a path.

    Streams the URLs with constant memory (the parsed file is held). Touches no state.

    Example:

        printf '/private/x\\n/a\\n' | crawlkit robots check --robots robots.txt --agent FooBot
    """
    rep = reporter()
    if robots is None or agent is None:
        raise UsageError("--robots FILE and --agent TOKEN are required")
    if robots == "-" and not urls:
        raise UsageError("--robots - reads stdin, so give the URLs as arguments")
    rules: RobotsTxt = rules_for_status(status, read_robots(robots))
    lines: Iterator[tuple[str, int, str | None]]
    if urls:
        lines = (("<args>", n, u) for n, u in enumerate(urls, 1))
    else:
        lines = streams.read_text_lines(None, rep, aligned=True)
    with streams.open_output(out) as sink:
        for record in check_lines(rules, agent, lines, rep, skip_blank=not urls):
            sink.write_record(record)
    if rep.input_damaged:
        raise typer.Exit(1)


@robots_app.command("parse")
def parse(
    file: Annotated[str, typer.Argument(help="The robots.txt file ('-' reads stdin).")],
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Also show which groups apply to this crawler and its merged Crawl-delay.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Show how a robots.txt parses: groups, rules, sitemaps, ignored lines, as JSON.

    Reads one robots.txt (first 512 KiB; "truncated" says whether there was more) and
    prints one indented JSON object: "groups" in file order, each with its product
    tokens ("agents"), its rules (as written and as compared after percent-encoding
    normalisation) and "crawl_delay"; global "sitemaps"; "ignored" lines with the
    reason (the first 100; "ignored_count" counts all). With --agent, "selected" is
    {"agent", "groups", "crawl_delay"}: the line numbers of the groups that apply to
    it (merged; [] for none) and the Crawl-delay it gets (null for none).

    Buffers the one file. Touches no state.

    Example:

        curl -s https://example.com/robots.txt | crawlkit robots parse - --agent FooBot
    """
    data = read_robots(file)
    parsed = RobotsTxt.parse(data)
    doc = parsed.to_dict()
    if agent is not None:
        doc["selected"] = {
            "agent": agent,
            "groups": [g.line for g in parsed.group_for(agent)],
            "crawl_delay": parsed.crawl_delay(agent),
        }
    del doc["mode"]
    with streams.open_output("-") as sink:
        sink.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
