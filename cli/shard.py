"""crawlkit shard."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import InputFiles, OldSlotMapName, Quiet, SlotMapFile, renamed

from crawlkit import streams
from crawlkit.errors import InvalidURL, UsageError
from crawlkit.shard.routing import deliver, grow
from crawlkit.shard.slots import DEFAULT_SLOTS, SlotMap
from crawlkit.stages.shard import route_lines, which


@app.command("shard")
def shard(
    files: InputFiles = None,
    shards: Annotated[
        int | None, typer.Option("--shards", help="Number of shards (without --slot-map).")
    ] = None,
    slots: Annotated[
        int, typer.Option("--slots", help="Number of hash slots (without --slot-map).")
    ] = DEFAULT_SLOTS,
    map_file: SlotMapFile = None,
    old_map_file: OldSlotMapName = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out-dir", help="Write DIR/shard-K.ndjson.zst for every shard K."),
    ] = None,
    which_urls: Annotated[
        list[str] | None,
        typer.Option("--which", help="Print site, slot and shard of this URL (repeatable)."),
    ] = None,
    save_map: Annotated[
        Path | None,
        typer.Option(
            "--save-map",
            help="Write the slot map (of --shards, or --slot-map grown by --grow) to this file.",
        ),
    ] = None,
    grow_to: Annotated[
        int | None,
        typer.Option(
            "--grow",
            help="With --slot-map and --save-map: a map for this many shards that moves the "
            "fewest slots; moved slots get epoch + 1.",
        ),
    ] = None,
    deliver_dirs: Annotated[
        list[Path] | None,
        typer.Option(
            "--deliver",
            help="Move every outbox file of these shard state directories into the inbox "
            "of the directory that owns its shard (repeatable; give every shard).",
        ),
    ] = None,
    handoff_from: Annotated[
        Path | None,
        typer.Option("--handoff-from", help="With --slot-map and --handoff-to: the old owner."),
    ] = None,
    handoff_to: Annotated[
        Path | None,
        typer.Option(
            "--handoff-to",
            help="The new owner: gets the host clocks, link and budget history, queued and "
            "waiting URLs of the sites --slot-map moved to it. Both owners must be stopped.",
        ),
    ] = None,
    handoff_shard: Annotated[
        int | None,
        typer.Option(
            "--shard",
            help="With --handoff-to a new directory: its shard number in --slot-map (a new "
            "node's state is made so).",
        ),
    ] = None,
    quiet: Quiet = False,
) -> None:
    """Split a record stream by registered-domain hash slot into N shard files.

    Reads any NDJSON records with "site" or "url" and writes each to
    DIR/shard-K.ndjson.zst, where K owns slot xxh3_64(site) mod SLOTS: by the slot map
    given with --slot-map, or by even contiguous ranges of slots. Every shard file is
    written (empty ones too), so a runner can tell "nothing for you" from "missing".
    Records without a usable site are reported and skipped. Same input, same bytes out.

    Streams: memory is constant; one open compressed writer per shard. Touches no
    state.

    Fleet operations (README "Scaling out"): --save-map writes a slot map (--grow
    rebalances one to more shards, moving the fewest slots and raising their epoch);
    --deliver moves shards' outboxes into their owners' inboxes between time slices;
    --handoff-from/--handoff-to hand the sites a new map moved over to their new
    owner (host clocks first, then each site's linkers, budget used and dedup yield,
    then queued and waiting URLs, then copies of their recrawl history and of the
    cookies they set), with both stopped; a new node's directory is made shard K of
    the map with --shard K.

    Example:

        crawlkit shard --shards 4 --out-dir outbox links.ndjson.zst
        crawlkit shard --shards 4 --which https://news.example.co.uk/a
        crawlkit shard --deliver s0 --deliver s1 --deliver s2 --deliver s3
    """
    map_file = renamed(map_file, old_map_file, "--slot-map", "--map", None)
    if deliver_dirs:
        counts = deliver(deliver_dirs, reporter())
        if not quiet:
            reporter().info(
                f"{counts['files']} outbox files delivered; {counts['undeliverable']} "
                "for shards not given"
            )
        return
    if handoff_from is not None or handoff_to is not None:
        if handoff_from is None or handoff_to is None or map_file is None:
            raise UsageError("--handoff-from and --handoff-to go together, with --slot-map")
        from crawlkit.fleet.handoff import handoff  # loads the frontier and numpy: only here

        counts = handoff(map_file, handoff_from, handoff_to, handoff_shard)
        if not quiet:
            reporter().info(
                f"handed over {counts['urls']} queued and {counts['waiting']} waiting URLs "
                f"and {counts['hosts']} host clocks and what it knew of {counts['sites']} sites "
                f"(linkers, budget used, dedup yield); copied {counts['history']} recrawl "
                f"history entries and {counts['cookies']} cookies"
            )
        return
    streams.check_output_dir(out_dir, "--out-dir")
    if map_file is not None:
        slot_map = SlotMap.load(map_file)
    elif shards is not None:
        slot_map = SlotMap.even(shards, slots)
    else:
        raise UsageError("give --shards N or --slot-map FILE")
    if grow_to is not None:
        if map_file is None:
            raise UsageError("--grow needs --slot-map (the current slot map)")
        slot_map = grow(slot_map, grow_to)
    if save_map is not None:
        slot_map.save(save_map)
        if not quiet:
            reporter().info(f"slot map of {slot_map.shards} shards written to {save_map}")
        if not which_urls and out_dir is None:
            return
    if which_urls:
        with streams.open_output("-") as sink:
            for url in which_urls:
                try:
                    sink.write_record(which(url, slot_map))
                except InvalidURL as exc:
                    raise UsageError(str(exc)) from exc
        return
    if out_dir is None:
        raise UsageError("give --out-dir DIR (or --which URL)")
    rep = reporter()
    per_shard = [0] * slot_map.shards
    with contextlib.ExitStack() as stack:
        sinks = [
            stack.enter_context(streams.open_output(out_dir / f"shard-{k}.ndjson.zst"))
            for k in range(slot_map.shards)
        ]
        records = streams.read_records_with_lines(files, rep)
        for k, record in route_lines(records, slot_map, reporter=rep):
            sinks[k].write_record(record)
            per_shard[k] += 1
    if not quiet:
        rep.info(
            f"{sum(per_shard)} records to {slot_map.shards} shards "
            f"(largest {max(per_shard)}, smallest {min(per_shard)}); {rep.bad_records} skipped"
        )
    if rep.input_damaged:
        raise typer.Exit(1)
