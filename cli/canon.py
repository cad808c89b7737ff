"""crawlkit canon."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import OutFile

from crawlkit import streams
from crawlkit.errors import InvalidURL, UsageError
from crawlkit.stages.canon import canon_records
from crawlkit.url import Canonicalizer, Rules, load_param_denylist


@app.command("canon")
def canon(
    files: Annotated[
        list[str] | None,
        typer.Argument(
            help="Input files of URLs, one a line, or of URL records (optionally zstd or "
            "gzip); '-' or none reads stdin.",
            show_default=False,
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option("--base", help="Resolve relative references against this URL."),
    ] = None,
    rules: Annotated[
        Rules,
        typer.Option(
            "--rules",
            help="none: WHATWG parse and resolve, drop the fragment. safe: also percent-escape "
            "and case normalization. default: safe plus tracking and session parameters "
            "removed, the query sorted and a host's trailing dot dropped (www.a.org. is "
            "www.a.org).",
            case_sensitive=False,
        ),
    ] = Rules.DEFAULT,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help='One {"input","url","host","site","fp","error"} object a line.'
        ),
    ] = False,
    param_denylist: Annotated[
        list[Path] | None,
        typer.Option(
            "--param-denylist",
            help="Extra query parameter names to drop at --rules default, one a line; a "
            "trailing * matches a prefix (repeatable).",
        ),
    ] = None,
    out: OutFile = "-",
) -> None:
    """Canonicalize URLs: one canonical URL (or JSON record) per input line.

    Reads URLs, or references relative to --base, one a line (plain text, optionally
    zstd or gzip); a line that is a JSON object (a URL record of another stage) counts
    as its "url". With --base an empty line is the empty reference and resolves to the
    base (WHATWG URL Standard); without it an empty line is an error. Writes one line
    per input line, in order: the canonical URL, or an empty line plus a warning on
    stderr when the input is not a usable http(s) URL, so output lines stay aligned
    with input lines. With --json each line is an object
    with the registered domain ("site", by the Public Suffix List) and the fingerprint
    ("fp", xxh3-64 as 16 hex digits).

    Streams with constant memory. Touches no state.

    Example:

        printf 'HTTP://Example.COM:80/a/../b?utm_source=x&b=2&a=1#top\\n' | crawlkit canon
    """
    rep = reporter()
    canonicalizer = Canonicalizer(rules, param_denylist=load_param_denylist(param_denylist or []))
    if base is not None:
        try:
            canonicalizer.canonicalize(base)
        except InvalidURL as exc:  # every line would be lost, absolute ones too
            raise UsageError(f"--base: {exc}") from exc
    lines = streams.read_text_lines(files, rep, aligned=True)
    with streams.open_output(out) as sink:
        for record in canon_records(lines, canonicalizer, base=base, reporter=rep):
            if as_json:
                sink.write_record(record)
            else:
                sink.write((record["url"] or "").encode("utf-8") + b"\n")
    if rep.input_damaged:
        raise typer.Exit(1)
