"""The pace of the fetch side of a crawl: when a live cycle is cut (records, age,
the post-processing backlog), how much of a refill the fetcher gets while cut cycles
wait for post-processing (back-pressure, docs/design.md invariant 8), and how long a
refill waits for answers before it asks the frontier again. Numbers and pure rules;
:mod:`crawlkit.crawl.fetchrun` applies them.
"""

from __future__ import annotations

__all__ = [
    "CHUNK_RECORDS",
    "CHUNK_SECONDS",
    "CUT_AGE_MAX",
    "CUT_CHECK",
    "CUT_SCALE_MAX",
    "EMPTY_CUT_AGE",
    "EMPTY_CUT_RECORDS",
    "POST_BACKLOG",
    "POST_BACKLOG_MAX",
    "REFILL_ANSWERS",
    "REFILL_LOOK",
    "REFILL_WAIT",
    "cut_due",
    "cut_scale",
    "refill_share",
]

# A cycle is cut (WARC closed, handed to post-processing) after this many fetch
# records or this many seconds, whichever comes first.
CHUNK_RECORDS = 500
CHUNK_SECONDS = 2.0
# A cycle is cut by age only while post-processing is idle, or at this age (see cut_due).
CUT_AGE_MAX = 4 * CHUNK_SECONDS
# Seconds between two looks at the clock for a cycle due to be cut (see cut_on_time).
CUT_CHECK = 0.5
# While the fetcher holds URLs, a cycle is cut because the frontier had nothing to
# give once it is this old or holds this many records (see FetchRun._refill).
EMPTY_CUT_AGE = 1.0
EMPTY_CUT_RECORDS = 16
# Cut cycles waiting for post-processing (the one in hand included) from which each
# refill is halved per cycle more, and at which the fetcher gets no more URLs. A hard
# stop at 2 left the fetcher with only URLs of hosts not yet due: 4 requests in flight
# of 256 with 2,510 URLs queued (issue 27, measured with the loop timeline, against
# POST_BACKLOG_MAX = 2, the old hard stop, in bench_crawl's A/B).
POST_BACKLOG = 2
POST_BACKLOG_MAX = 6
# Fetch records a refill waits for since the last batch before it asks the frontier
# again (fewer when the fetcher holds few URLs), and the longest it waits for them;
# URLs queued meanwhile end the wait (see FetchRun._await_answers).
REFILL_ANSWERS = 64
REFILL_WAIT = 1.0
REFILL_LOOK = 0.25  # how often a waiting refill looks for URLs queued meanwhile

# While cut cycles wait, cycles may be cut bigger (x2 per waiting cycle from
# POST_BACKLOG, at most CUT_SCALE_MAX): post-processing pays a fixed cost per cycle
# (seen set, frontier and step commits, each with fsyncs: half the post thread's time
# in py-spy), so bigger cycles could let it take more records a second when it lags.
# Off (1) by default: at 4 it did not measurably help (issue 27; 39 and 69 new
# pages/s against 62 and 61 at load 10-12).
CUT_SCALE_MAX = 1


def cut_scale(backlog: int) -> int:
    """How many times ``CHUNK_RECORDS`` and ``CHUNK_SECONDS`` a cycle may grow to
    while ``backlog`` cut cycles wait for post-processing."""
    if backlog < POST_BACKLOG:
        return 1
    return int(min(CUT_SCALE_MAX, 2 ** (backlog - POST_BACKLOG + 1)))


def cut_due(records: int, age: float, backlog: int, workers: int = 1) -> bool:
    """Whether a live cycle of ``records`` fetch records, ``age`` seconds old, is cut
    now, while ``backlog`` cut cycles wait for post-processing, in a crawl process
    that is one of ``workers`` (``crawl --workers``)."""
    scale = cut_scale(backlog)
    if records >= CHUNK_RECORDS * scale:
        return True
    if records == 0:
        return False
    # A worker of --workers N fetches about 1/N of the crawl's pages: its cycles reach
    # one process's size in N times the age. Cut at one process's age, they held
    # about half the records at N = 2 (issue 27), each paying the fixed costs below.
    seconds, oldest = CHUNK_SECONDS * scale * workers, CUT_AGE_MAX * workers
    # By age only once post-processing is idle (or the cycle is very old): while it
    # works on an earlier cycle this one's links wait for that one anyway, and
    # a cycle cut then would queue with half its records, paying post-processing's
    # fixed costs (commits, fsyncs) twice as often per page.
    return age >= seconds and (backlog == 0 or age >= oldest)


def refill_share(backlog: int) -> float:
    """The share of a full refill the fetcher gets while ``backlog`` cut cycles wait."""
    if backlog < POST_BACKLOG:
        return 1.0
    if backlog >= POST_BACKLOG_MAX:
        return 0.0
    return 0.5 ** (backlog - POST_BACKLOG + 1)
