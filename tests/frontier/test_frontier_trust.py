"""Site trust (``SiteTable.trusted``) kept up to date link by link equals trust computed
afresh from the whole site graph."""

from __future__ import annotations

import gc
import random
import sys
import tracemalloc

from hypothesis import example, given, settings
from hypothesis import strategies as st

from crawlkit.frontier.budgets import BudgetPolicy, SiteTable

_links = st.lists(
    st.tuples(
        st.sampled_from(["link", "seed", "look", "yield"]), st.integers(0, 5), st.integers(0, 5)
    ),
    max_size=60,
)


@given(_links, st.integers(1, 3))
# s0 trusted vouches for s1; then s1 links back, and s0's vote no longer counts
@example([("seed", 0, 0), ("link", 1, 0), ("look", 0, 0), ("link", 0, 1)], 1)
# s0 and s1 trusted vote for s2, the second vote makes it trusted
@example([("seed", 0, 0), ("seed", 1, 0), ("look", 0, 0), ("link", 2, 0), ("link", 2, 1)], 2)
# s2 -> s3 -> s4 -> s2 trusted in turn, each with a vote of seed s1 too; then seed s0's
# vote for s2 is taken back: s4 votes for s2 but is trusted only through it, so all three
# lose their trust
@example(
    [
        ("seed", 0, 0),
        ("seed", 1, 0),
        ("look", 0, 0),
        *[("link", a, b) for a, b in [(2, 0), (2, 1), (3, 2), (3, 1), (4, 3), (4, 1), (2, 4)]],
        ("link", 0, 2),
    ],
    2,
)
@settings(max_examples=500, deadline=None)
def test_trust_kept_link_by_link_equals_trust_computed_afresh(ops, trust_links) -> None:
    """The trusted set the table keeps as links arrive (recomputing only when a link
    may change it) is the one a walk of the whole graph finds, whenever it is asked;
    so are the budgets it remembers between changes."""
    table = SiteTable(BudgetPolicy(trust_links=trust_links, max_linkers=5))
    for kind, a, b in ops:
        if kind == "link":
            table.note_link(f"s{a}", f"s{b}")
        elif kind == "seed":
            table.note_seed(f"s{a}")
        elif kind == "yield":
            table.note_yield(f"s{a}", 5 + b, b / 5)
        else:
            fresh = SiteTable(table.policy)
            fresh.sites = table.sites
            assert table.trusted() == fresh.trusted()
            assert all(table.budget(s) == fresh.budget(s) for s in table.sites)
    fresh = SiteTable(table.policy)
    fresh.sites = table.sites
    assert table.trusted() == fresh.trusted()


def test_linkers_are_kept_sorted_shared_and_small() -> None:
    """A site's linkers: each name once, sorted, one string per name among all sites
    (each linker name below is a new string, as parsed from a record), a journal round
    trip keeps them, the ``max_linkers`` cap holds, and 2,000 sites with 20 linkers
    each cost well under what sets of fresh strings did (~1.8 KB a site)."""
    import gc
    import tracemalloc

    from crawlkit.frontier.budgets import SiteInfo, has_linker

    n = 2000
    # The names are interned before the trace and their strings counted by size: the
    # interpreter's table of interned strings is one for the process, and growing it
    # during the trace (once earlier tests had interned many names) charged this
    # table with MBs (1,346 B a site after test_frontier and test_frontier_journal).
    names = [sys.intern(f"site{i}.test") for i in range(n)]
    gc.collect()
    tracemalloc.start()
    table = SiteTable()
    for i in range(n):
        for j in range(1, 21):
            table.note_link(f"site{i}.test", "site%d.test" % ((i + j * 7) % n))  # noqa: UP031
        table.note_link(f"site{i}.test", "site%d.test" % ((i + 7) % n))  # noqa: UP031 - again
    table.take_changes()  # as a commit does: the linkers gained since are let go
    # What this test and the frontier's code allocated: another thread of the process
    # (a server a test before left running under xdist) is not the table's.
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(True, __file__), tracemalloc.Filter(True, "*/crawlkit/frontier/*")]
    )
    tracemalloc.stop()
    held = sum(stat.size for stat in snapshot.statistics("filename"))
    held += sum(map(sys.getsizeof, names))
    assert held / n < 700, f"{held / n:.0f} B a site"

    info = table.sites["site0.test"]
    assert info.linkers is not None and len(info.linkers) == 20
    assert list(info.linkers) == sorted(set(info.linkers))
    assert has_linker(info.linkers, "site7.test") and not has_linker(info.linkers, "site8.test")
    assert not has_linker(None, "site7.test")
    # One string object per name: a linker of two sites is the same object in both.
    other = table.sites["site7.test"].linkers  # site14 ... site147 by 7: 19 shared
    assert other is not None
    shared = [x for x in other if x in info.linkers]
    assert len(shared) == 19
    assert all(any(x is y for y in info.linkers) for x in shared)
    assert SiteInfo.from_json(info.to_json()).linkers == info.linkers

    capped = SiteTable(BudgetPolicy(max_linkers=5))
    for j in range(10, 0, -1):
        capped.note_link("a.test", f"l{j}.test")
    assert capped.sites["a.test"].linkers == tuple(sorted(f"l{j}.test" for j in range(6, 11)))


def test_the_site_graph_costs_a_pointer_a_link_however_names_arrive() -> None:
    """A crawl's links name sites with strings parsed afresh from each record; with
    trust kept up to date (as budgets ask for it every batch), every link remembered
    must share one copy of each name. It kept the record's own copy of the linked
    site's name in the trust graph's out-links: ~72 bytes a link (18 KB a site at 256
    linkers, 270 MB for 15,000 such sites) where sharing costs ~18."""
    sites, links_each = 300, 120
    table = SiteTable()
    for i in range(sites):
        table.get(f"h{i}.test").queued = 1
        if i % 50 == 0:
            table.note_seed(f"h{i}.test")
    rng = random.Random(5)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(links_each):
            table.trusted()  # kept up to date from here on, link by link
            for i in range(sites):
                # "%d" % i makes a new str each time, as orjson does for each record
                table.note_link("h%d.test" % i, "h%d.test" % rng.randrange(sites))  # noqa: UP031
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    linkers = sum(len(table.get(f"h{i}.test").linkers or ()) for i in range(sites))
    assert linkers > sites * 80  # most links were new, so remembered
    assert table.trusted()  # the graph was kept, not dropped
    assert (after - before) / linkers < 32
