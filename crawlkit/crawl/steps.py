"""The loop of ``crawlkit crawl`` as a list of steps: what runs, and what ``--explain`` says.

:data:`STEPS` is the crawl's loop, in order. The first two run on the fetch side
(the fetcher asks the frontier for more as it goes); every cycle the fetcher cuts then
goes through the others, each marking itself done in the cycle's directory with a
``<marker>.done`` file, so a crashed run resumes at the first step not done.
:func:`render` prints the same list as the equivalent stage commands, so the loop a
user reads in ``--explain`` is the loop that runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

__all__ = ["POST_STEPS", "SEED_COMMAND", "STEPS", "ExplainContext", "Step", "StepRunner", "render"]


@dataclass(frozen=True)
class ExplainContext:
    """What the commands of ``--explain`` are filled with."""

    state: str
    warc: str
    batch: int
    per_host: int
    budgets: bool
    jobs: int
    scope: str
    rules: str = "default"  # crawl --rules: extract's; the other stages read the state's
    shard: str = ""  # " --shard K --shards N" (or --slot-map FILE) of a fleet's shard
    # The other options crawl was given, as flags of each stage that has them (the CLI
    # reads them off its own options: crawlkit_cli.explain); each empty or " --x y".
    fetch_flags: str = ""
    seen_flags: str = ""
    add_flags: str = ""
    next_flags: str = ""
    seeds: str = ""  # a shell command printing the seeds, one a line (none: no seeds)


class StepRunner(Protocol):
    """What runs the post steps of a cycle (:class:`crawlkit.crawl.cycle.CycleRunner`,
    which imports this list: named here by its methods, not imported)."""

    def extract(self, cycle: Path) -> None: ...
    def dedup(self, cycle: Path) -> None: ...
    def links(self, cycle: Path) -> None: ...
    def recrawl(self, cycle: Path) -> None: ...


@dataclass(frozen=True)
class Step:
    """One step of the loop: ``marker`` names its done-file in a cycle directory;
    ``commands`` are the stage commands it equals, as format strings over
    :class:`ExplainContext` fields; ``run`` (a post step's) runs it on a cycle."""

    marker: str
    what: str
    commands: tuple[str, ...]
    post: bool = True  # runs once per cut cycle (False: on the fetch side, as it goes)
    run: Callable[[StepRunner, Path], None] | None = field(default=None, compare=False)


# Seconds the recrawl budget's μ is kept between solves while the URLs tracked and
# updated since stay within 10% of those it was solved for (recrawl_in's hold_mu;
# the recrawl step's --hold-mu 60s). Solving is 10-20 passes over every tracked URL,
# and a crawl plans every cycle: 158 ms a cycle at 30k URLs without the hold, 33 ms
# with it (bench_recrawl_stage.py --cycle 30000 --rounds 30 --step 10 --hold 60; it
# emits 604 URLs in those 30 cycles against 565, within the hold's 10%).
RECRAWL_HOLD_MU = 60.0

STEPS: tuple[Step, ...] = (
    Step(
        "next",
        "frontier next: the next URLs, at most --per-host of a host in the fetcher",
        (
            "crawlkit frontier next --state {state}{shard} --max {batch} --per-host {per_host}"
            "{no_budgets}{next_flags} -o $C/batch.ndjson.zst",
        ),
        post=False,
    ),
    Step(
        "fetch",
        "fetch: polite, into WARC files; a cycle is cut every 500 records or 2 s",
        (
            "crawlkit fetch --state {state}{shard} $C/batch.ndjson.zst --warc-dir {warc}"
            "{fetch_flags} --log $C/fetch.ndjson --redirects $C/redirects.ndjson",
        ),
        post=False,
    ),
    Step(
        "extract",
        "extract: pages and links of the cycle's WARC records",
        (
            # the directory, not a glob: a cycle that wrote no WARC file extracts nothing
            "crawlkit extract -j {jobs}{rules_flag} {warc}/new --pages $C/pages.ndjson.zst "
            "--links $C/links.ndjson.zst",
            # extracted files join the collection, so the next cycle reads only its own
            # (find: none to move is no error)
            "find {warc}/new -maxdepth 1 -name '*.warc.gz' -exec mv {{}} {warc}/ ';'",
        ),
        run=lambda cycles, cycle: cycles.extract(cycle),
    ),
    Step(
        "dedup",
        "dedup: exact and near duplicates; site yields feed the budgets",
        (
            "crawlkit dedup --state {state} $C/pages.ndjson.zst --sites $C/sites.ndjson.zst "
            "-o $C/dedup.ndjson.zst && crawlkit frontier add --state {state}{shard} --scope {scope}"
            "{add_flags} $C/sites.ndjson.zst",
        ),
        run=lambda cycles, cycle: cycles.dedup(cycle),
    ),
    Step(
        "links",
        "seen-merge and frontier add: new links and redirects are queued, those outside "
        "--scope or past --max-depth refused before they are marked seen; deferred URLs "
        "wait in the waiting room until their retry time ('frontier next' queues them "
        "then)",
        (
            "crawlkit frontier links --state {state} $C/links.ndjson.zst",
            "crawlkit seen-merge --state {state} --scope {scope}{seen_flags} "
            "--fetched $C/fetch.ndjson --refused "
            "$C/scope-refused.ndjson.zst $C/links.ndjson.zst $C/redirects.ndjson "
            "| crawlkit frontier add --state {state}{shard} --scope {scope}{add_flags}",
            "crawlkit frontier add --state {state} --deferred $C/fetch.ndjson",
        ),
        run=lambda cycles, cycle: cycles.links(cycle),
    ),
    Step(
        "recrawl",
        "recrawl: change history; URLs due again are queued (deferred ones are not: "
        "they wait in the waiting room only)",
        (
            "crawlkit recrawl --state {state} --hold-mu "
            + f"{RECRAWL_HOLD_MU:g}s"
            + " $C/fetch.ndjson $C/pages.ndjson.zst $C/links.ndjson.zst "
            "| crawlkit frontier add --state {state}{shard} --scope {scope}{add_flags}",
        ),
        run=lambda cycles, cycle: cycles.recrawl(cycle),
    ),
)

POST_STEPS: tuple[Step, ...] = tuple(s for s in STEPS if s.post)

#: How crawl admits its seeds, as stage commands.
SEED_COMMAND = (
    "{seeds} | crawlkit seen-merge --state {state} --scope {scope}{seen_flags} --reason seed "
    "| crawlkit frontier add --state {state}{shard} --scope {scope}{add_flags}"
)


def render(ctx: ExplainContext) -> str:
    """The loop as shell commands for one cycle, one comment line per step."""
    fields = {**ctx.__dict__, "no_budgets": "" if ctx.budgets else " --no-budgets"}
    fields["rules_flag"] = "" if ctx.rules == "default" else f" --rules {ctx.rules}"
    lines = []
    if ctx.seeds:
        lines += [
            "# once, the seeds: they widen --scope, are marked seen and queued",
            " ".join(SEED_COMMAND.format(**fields).split()),
        ]
    lines.append(
        f"# one cycle of: crawlkit crawl --state {ctx.state} (C = {ctx.state}/crawl/cycles/NNNNNN)"
    )
    for step in STEPS:
        lines.append(f"# {step.what}")
        lines.extend(" ".join(c.format(**fields).split()) for c in step.commands)
    return "\n".join(lines)
