"""crawlkit shard."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import InputFiles, Quiet

from crawlkit import io
from crawlkit.errors import InvalidURL, UsageError
from crawlkit.shard import DEFAULT_SLOTS, SlotMap, route_records, which


@app.command("shard")
def shard(
    files: InputFiles = None,
    shards: Annotated[
        int | None, typer.Option("--shards", help="Number of shards (without --map).")
    ] = None,
    slots: Annotated[
        int, typer.Option("--slots", help="Number of hash slots (without --map).")
    ] = DEFAULT_SLOTS,
    map_file: Annotated[
        Path | None,
        typer.Option("--map", help="A JSON slot map (owner and epoch per slot)."),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out-dir", help="Write DIR/shard-K.ndjson.zst for every shard K."),
    ] = None,
    which_urls: Annotated[
        list[str] | None,
        typer.Option("--which", help="Print site, slot and shard of this URL (repeatable)."),
    ] = None,
    quiet: Quiet = False,
) -> None:
    """Split a record stream by registered-domain hash slot into N shard files.

    Reads any NDJSON records with "site" or "url" and writes each to
    DIR/shard-K.ndjson.zst, where K owns slot xxh3_64(site) mod SLOTS: by the slot map
    given with --map, or by even contiguous ranges of slots. Every shard file is
    written (empty ones too), so a runner can tell "nothing for you" from "missing".
    Records without a usable site are reported and skipped. Same input, same bytes out.

    Streams: memory is constant; one open compressed writer per shard. Touches no
    state.

    Example:

        crawlkit shard --shards 4 --out-dir outbox links.ndjson.zst
        crawlkit shard --shards 4 --which https://news.example.co.uk/a
    """
    if map_file is not None:
        slot_map = SlotMap.load(map_file)
    elif shards is not None:
        slot_map = SlotMap.even(shards, slots)
    else:
        raise UsageError("give --shards N or --map FILE")
    if which_urls:
        with io.open_output("-") as sink:
            for url in which_urls:
                try:
                    sink.write_record(which(url, slot_map))
                except InvalidURL as exc:
                    raise UsageError(str(exc)) from exc
        return
    if out_dir is None:
        raise UsageError("give --out-dir DIR (or --which URL)")
    rep = reporter()
    counts = [0] * slot_map.shards
    with contextlib.ExitStack() as stack:
        sinks = [
            stack.enter_context(io.open_output(out_dir / f"shard-{k}.ndjson.zst"))
            for k in range(slot_map.shards)
        ]
        for k, record in route_records(io.read_records(files, rep), slot_map, reporter=rep):
            sinks[k].write_record(record)
            counts[k] += 1
    if not quiet:
        rep.info(
            f"{sum(counts)} records to {slot_map.shards} shards "
            f"(largest {max(counts)}, smallest {min(counts)}); {rep.bad_records} skipped"
        )
    if rep.counts["truncated input"] or rep.counts["corrupt input"]:
        raise typer.Exit(1)
