"""A state given more workers hands each moved site's cookies to its new owner
(``crawl/rebalance.py`` step 7): they stayed in the old owner's jar, so a moved site's
session started over."""

from __future__ import annotations

from pathlib import Path

from crawlkit.fetch.cookies import Cookie, cookie_jar, read_cookies, write_cookies
from crawlkit.fleet.handoff import copy_cookies
from crawlkit.shard.slots import SlotMap

FAR = 4_000_000_000  # expires in 2096


def _cookie(domain: str, name: str = "sid") -> Cookie:
    return Cookie(domain, False, "/", False, FAR, name, f"v-{domain}")


def test_the_new_owner_gets_the_cookies_of_its_sites_only(tmp_path: Path) -> None:
    grown = SlotMap.even(3)
    sites = [f"site{i}.test" for i in range(30)]
    olds = [tmp_path / "0", tmp_path / "1"]
    for k, old in enumerate(olds):
        jar = cookie_jar(old)
        jar.parent.mkdir(parents=True)
        # each old worker's sites, two hosts of a site each
        mine = [s for i, s in enumerate(sites) if i % 2 == k]
        write_cookies(jar, [_cookie(h) for s in mine for h in (s, f"www.{s}")], 0)
    new = tmp_path / "2"
    copied = copy_cookies(olds, new, grown, 2)
    moved = {s for s in sites if grown.shard_of_site(s) == 2}
    assert moved and len(moved) < len(sites)
    got = {c.domain for c in read_cookies(cookie_jar(new))}
    assert got == {h for s in moved for h in (s, f"www.{s}")}
    assert copied == 2 * len(moved)
    assert copy_cookies(olds, new, grown, 2) == 0  # a rerun after a crash adds none
