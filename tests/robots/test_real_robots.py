"""The robots.txt parser on 4,231 real files (protego's test data), when placed.

Every file parses, compiles for three agents and answers a check without raising, and
every rule read is a pattern starting with ``/`` or ``*``. A few files pin a verdict:
each is a shape found on these files where crawlkit was wrong (fixed) or where
protego answers otherwise and crawlkit follows RFC 9309 and Google's parser. The files
are not committed (tests/data/real-robots/README.md); the tests skip without them.
``bench/real_robots.py`` makes the full comparison with protego and urllib.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import ROOT

from crawlkit.robots import RobotsTxt, Verdict

_DIR = Path(os.environ.get("CRAWLKIT_REAL_ROBOTS", ROOT / "tests" / "data" / "real-robots"))
_AGENTS = ("crawlkit", "Googlebot", "*")


def _files() -> list[Path]:
    if not _DIR.is_dir():
        return []
    return sorted(p for p in _DIR.iterdir() if p.is_file() and p.name != "README.md")


def test_every_real_file_parses_and_answers() -> None:
    files = _files()
    if not files:
        pytest.skip(f"no robots.txt files in {_DIR} (tests/data/real-robots/README.md)")
    bad: list[str] = []
    for path in files:
        robots = RobotsTxt.parse(path.read_bytes())
        for agent in _AGENTS:
            assert isinstance(robots.check(agent, "/"), Verdict), path.name
        bad += [
            f"{path.name}:{rule.line}: {rule.text}"
            for group in robots.groups
            for rule in group.rules
            if rule.pattern and not rule.normalized.startswith(("/", "*"))
        ]
    assert not bad, bad[:10]


# (file, sha256, agent, URL, verdict, why)
PINNED = [
    (
        "store.usps.com",
        "45e68e960341bfe6fe5e836a9500a9cc277102b957890e319ae4fae5dd513bfd",
        "crawlkit",
        "/store/cart/",
        Verdict(False, "Disallow: /store/cart/"),
        "UTF-16LE with a BOM: read as UTF-8 it had no rules at all",
    ),
    (
        "bitbucket.org",
        "a167692cb73925883fd3f91566f7c732a790253849c9174f428746fa5570b1da",
        "crawlkit",
        "/",
        Verdict(False, "Disallow: /"),
        "'User-Agent: *', 'Crawl-delay: 120', 'User-agent: 008', 'Disallow: /' is one "
        "group (RFC 9309 grammar; Google's parser too); protego ends it at Crawl-delay",
    ),
    (
        "hootsuite.com",
        "602f34bfdb123cc1097490a65c6617a6b52f1a82c631adac636b8d93571ea9f7",
        "Googlebot",
        "/ajax",
        Verdict(False, "Disallow: /ajax*"),
        "'User-Agent: Googlebot', Noindex lines, 'User-Agent: *': one group, as above",
    ),
    (
        "www.bom.gov.au",
        "5b5741555c1aaaf1764e766a07391332962481bf18e8f87dbcf73de06bf2e607",
        "Googlebot",
        "/sa/?q=1",
        Verdict(True, "Allow: /sa/"),
        "'Allow: /sa/' (4 octets) outranks 'Disallow: /*?' (3); protego measures the "
        "'?' as '%3F' and lets the Disallow win",
    ),
    (
        "en.wikipedia.org",
        "b1e382711d5b9a5c197c57c647692ebcd4c31ad48ec2c56d469c3d221eff5d9f",
        "crawlkit",
        "/wiki/Wikipedia:Administrators%27_noticeboard",
        Verdict(False, "Disallow: /wiki/Wikipedia:Administrators%27_noticeboard"),
        "an escaped reserved character matches only its escape",
    ),
    (
        "artofmanliness.com",
        "72c2513e92b4cf50107c0a0d5d4f1091c09bc32f5baedf2bfe0237af287fb72f",
        "crawlkit",
        "/search-results/?cx=007683775889793086658:ql5awm4scyk&cof=FORID:10&ie=UTF-8"
        "&q=self+confidence&sa=Search&siteurl=artofmanliness.com/",
        Verdict(
            False,
            "Disallow: /search-results/?cx=007683775889793086658%3Aql5awm4scyk"
            "&cof=FORID%3A10&ie=UTF-8&q=self+confidence&sa=Search"
            "&siteurl=artofmanliness.com%2F",
        ),
        "in the query %3A and %2F are ':' and '/' (RFC 9309 2.2.2's table); protego "
        "keeps %2F apart",
    ),
    (
        "www.ameriprise.com",
        "3e719754402fb3af26038241d691043c38acad270e52f5aab97270082964510a",
        "crawlkit",
        "/robots.tx%74",
        Verdict(True, None),
        "%74 is 't': this is /robots.txt, always allowed (protego applies the rules)",
    ),
]


@pytest.mark.parametrize(
    ("name", "sha256", "agent", "url", "verdict", "why"), PINNED, ids=[p[0] for p in PINNED]
)
def test_a_real_file_gives_the_verdict(
    name: str, sha256: str, agent: str, url: str, verdict: Verdict, why: str
) -> None:
    path = _DIR / name
    if not path.exists():
        pytest.skip(f"{name} not in {_DIR} (tests/data/real-robots/README.md)")
    body = path.read_bytes()
    if hashlib.sha256(body).hexdigest() != sha256:
        pytest.skip(f"{path} is another version of {name}")
    assert RobotsTxt.parse(body).check(agent, url) == verdict, why
