"""The site graph learned from a cycle's links a slice at a time.

(:mod:`crawlkit.frontier.sitelinks`)
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from crawlkit.frontier.budgets import BudgetPolicy
from crawlkit.frontier.sitelinks import SiteLinks
from crawlkit.frontier.store import Frontier


def _links(n: int, seed: int) -> list[dict[str, Any]]:
    """Links among 40 sites, a page's links one after another, some nofollow, some
    within a site, some naming their site only by URL."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    while len(out) < n:
        page = f"http://www.s{rng.randrange(40)}.test/p{rng.randrange(50)}"
        for _ in range(rng.randrange(1, 8)):
            to = rng.randrange(40)
            rec: dict[str, Any] = {"url": f"http://s{to}.test/x{rng.randrange(9)}", "from": page}
            if rng.random() < 0.7:
                rec["site"] = f"s{to}.test"
            if rng.random() < 0.1:
                rec["nofollow"] = True
            out.append(rec)
    return out


def test_slices_teach_the_graph_that_each_link_in_turn_does(tmp_path: Path) -> None:
    """A site's linkers are capped (here at 3), so which are kept depends on the order
    links are learned: gathering the pairs of slices must keep the order of a
    record-by-record pass, repeats included."""
    policy = BudgetPolicy(max_linkers=3)
    links = _links(3000, seed=7)
    one_by_one = Frontier.open(tmp_path / "a", policy=policy)
    for rec in links:
        one_by_one.note_links([rec])
    sliced = Frontier.open(tmp_path / "b", policy=policy)
    gathered = SiteLinks()
    for start in range(0, len(links), 128):
        gathered.add(links[start : start + 128])
    assert sliced.note_site_links(gathered) == (len(links), gathered.noted)
    expected = one_by_one.sites.to_json()
    assert sliced.sites.to_json() == expected
    # the cap was reached, so the order mattered
    assert any(len(v.linkers or ()) == 3 for v in one_by_one.sites.sites.values())
    # every cross-site followed link counted once per record
    cross = [
        r
        for r in links
        if not r.get("nofollow")
        and r.get("site", r["url"].split("/")[2]) != r["from"][11:].split("/")[0]
    ]
    assert gathered.noted == len(cross)
