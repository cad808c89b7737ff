"""crawlkit's robots.txt parser on real files, and its verdicts against two oracles.

Run on demand (never in CI): ``.venv/bin/python bench/real_robots.py DIR [--show N]``.
``DIR`` holds robots.txt files, one per site, each named by its site. The corpus used
so far is the test data of Scrapy's protego (4,231 files of popular sites, commit
81f1b35), brought read-only with the ``fetch`` tool (or ``git clone --bare``)::

    mkdir -p /tmp/robots-real
    git --git-dir=/path/to/protego.git archive HEAD tests/test_data \\
        | tar -x -C /tmp/robots-real
    .venv/bin/python bench/real_robots.py /tmp/robots-real/tests/test_data

Those files are not committed (data brought by fetch stays out of the tree);
``tests/robots/test_real_robots.py`` runs over them when they are placed in
tests/data/real-robots/ or $CRAWLKIT_REAL_ROBOTS.

What it does, per file:

1. Parses it with crawlkit (never raising, and timing it: the slowest files are
   printed), and checks that every group and rule it read is well formed.
2. Builds URLs from the file's own rule paths, with variations (the path, with a
   suffix, with a query, a percent-encoded and a decoded spelling, and ``/``), and
   asks crawlkit, protego (Google's spec; ``pip install protego``, a bench extra) and
   urllib.robotparser (the 1996 draft: first match wins, no wildcards) for the agents
   ``crawlkit`` (named by no file: the ``*`` group), ``Googlebot`` and ``*``.
3. Counts agreements per oracle and sorts each disagreement into a class named by its
   cause (see ``_protego_class`` and ``_urllib_class``), printing ``--show`` examples
   of each class.
"""

from __future__ import annotations

import argparse
import collections
import random
import re
import sys
import time
import urllib.robotparser
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

from crawlkit.robots import RobotsTxt, agent_token

try:
    from protego import Protego

    # to name the rule protego's verdict came from
    from protego._utils import _quote_path, _quote_pattern
except ImportError:  # pragma: no cover - the bench extra is not installed
    sys.exit("bench/real_robots.py needs protego: .venv/bin/pip install protego")

AGENTS = ("crawlkit", "Googlebot", "*")
HOST = "https://example.com"
RULES_PER_FILE = 15  # rules sampled per file, each giving up to six URLs


@dataclass
class Tally:
    """What the run counts."""

    files: int = 0
    not_robots: int = 0  # HTML pages and the like: no group at all, no sitemap
    parse_failures: list[str] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)
    groups: int = 0
    rules: int = 0
    times: list[tuple[float, str, int]] = field(default_factory=list)
    checks: int = 0
    agree: collections.Counter[str] = field(default_factory=collections.Counter)
    classes: dict[str, collections.Counter[str]] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )
    examples: dict[tuple[str, str], list[str]] = field(
        default_factory=lambda: collections.defaultdict(list)
    )


def urls_for(robots: RobotsTxt, rng: random.Random) -> list[str]:
    """Paths made from a sample of the file's own rule patterns, with variations."""
    patterns = sorted({r.pattern for g in robots.groups for r in g.rules if r.pattern})
    if len(patterns) > RULES_PER_FILE:
        patterns = rng.sample(patterns, RULES_PER_FILE)
    paths = {"/"}
    for pattern in patterns:
        base = pattern.removesuffix("$")
        base = base.rstrip("*").replace("*", "x1") or "/"
        paths.update((base, base + "more", base + "?q=1"))
        if "%" in base:
            paths.add(unquote(base))  # the decoded spelling
        elif not base.isascii():
            paths.add(quote(base, safe="/?=&;:@!$'()*+,~"))  # the encoded spelling
        last = base[-1]
        # an unreserved character, escaped: the same URL (RFC 3986 2.3)
        if last.isalnum() and "%" not in base[-3:]:
            paths.add(base[:-1] + f"%{ord(last):02x}")
    return sorted(paths)


def _protego_rule(p: Protego, agent: str, url: str) -> tuple[str | None, str | None]:
    """The user agent of the group protego picked and the rule that decided."""
    rs = p._get_matching_rule_set(agent)
    if rs is None:
        return None, None
    path = _quote_path(url)
    for rule in rs._rules:
        if rule.value.match(path):
            return rs.user_agent, f"{rule.field}: {rule.value._pattern}"
    return rs.user_agent, None


def _protego_class(robots: RobotsTxt, p: Protego, agent: str, path: str) -> str:
    """The cause of a disagreement with protego, as far as it can be told apart."""
    ua, prule = _protego_rule(p, agent, HOST + path)
    groups = robots.group_for(agent)
    ours = {t for g in groups for t in g.agents}
    token = agent_token(agent) or "*"
    if ua is not None and ua not in ours and not (ua == "*" and token not in ours):
        return f"group: protego matches {agent!r} to user-agent {ua!r} (a substring)"
    if ua is None and ours:
        return "group: protego finds no group"
    rs = p._get_matching_rule_set(agent)
    theirs = set() if rs is None else {r.value._pattern for r in rs._rules}
    deciding = [r for g in groups for r in g.rules if r.text == robots.check(agent, path).rule]
    if deciding and not any(_quote_pattern(r.pattern) in theirs for r in deciding):
        # "User-agent: a / Crawl-delay: 1 (or Noindex:) / User-agent: b / Disallow: /x":
        # one group of a and b by the RFC 9309 grammar and Google's parser
        return "group: protego ends a group at a non-rule line between user-agents"
    if prule is not None and "index.htm" not in path and prule.endswith("/$"):
        return "protego: Allow .../index.html also allows .../"
    if path.startswith("/robots.txt") or path.startswith("/robots.tx%"):
        return "protego: /robots.txt spelled with an escape is not /robots.txt"
    if "/." in path.split("?")[0]:
        return "dot segments: crawlkit resolves them first, as the server will"
    if any(ord(c) < 32 for c in path):
        return "control characters: crawlkit escapes them, protego drops them"
    query = path.partition("?")[2] + (prule or "").partition("%3F")[2]
    if "?" in path and re.search("%(2F|3A|3F|40)|[/:?@]", query, re.I):
        return "query: %2F %3A %3F %40 are / : ? @ (RFC 9309 2.2.2 table)"
    ours_rule = robots.check(agent, path).rule or ""
    if prule and prule.startswith("disallow") and "%3F" in prule and ours_rule.startswith("Allow"):
        return "priority: protego measures a '?' in a rule as 3 octets ('%3F')"
    if re.search("%(2[146-9BC]|3[ABDF]|40|5[BD])", ours_rule + (prule or ""), re.I):
        # an escaped reserved character (RFC 3986 2.2) is not the character itself
        return "reserved: an escaped reserved character in the path (crawlkit, Google)"
    if "%" in path or "%" in (prule or "") or not path.isascii():
        return "percent-encoding"
    return "other"


def _urllib_class(robots: RobotsTxt, agent: str) -> str:
    """The cause of a disagreement with urllib.robotparser (the 1996 draft's rules)."""
    rules = [r for g in robots.group_for(agent) for r in g.rules]
    if any(("*" in r.pattern or r.pattern.endswith("$")) for r in rules):
        return "urllib: no wildcards or $"
    if any(not r.pattern for r in rules):
        return "urllib: an empty Disallow is a rule allowing all, and first match wins"
    return "urllib: first match wins, not the longest"


def _text(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", "replace")
    return data.decode("utf-8-sig", "replace")


def run_file(path: Path, tally: Tally, show: int) -> None:
    data = path.read_bytes()
    tally.files += 1
    start = time.perf_counter()
    try:
        robots = RobotsTxt.parse(data)
        for agent in AGENTS:
            robots.prepare(agent)
    except Exception as exc:  # the parser promises never to raise
        tally.parse_failures.append(f"{path.name}: {exc!r}")
        return
    tally.times.append((time.perf_counter() - start, path.name, len(data)))
    if not robots.groups and not robots.sitemaps:
        tally.not_robots += 1
    tally.groups += len(robots.groups)
    for g in robots.groups:
        tally.rules += len(g.rules)
        for r in g.rules:
            if r.pattern and not r.normalized.startswith(("/", "*")):
                tally.malformed.append(f"{path.name}:{r.line}: {r.text!r}")
    # the oracles take text, decoded here as crawlkit decodes the bytes (a BOM is no
    # key's first character), so that parsing and matching are what is compared
    text = _text(data)
    protego = Protego.parse(text)
    legacy = urllib.robotparser.RobotFileParser()
    legacy.parse(text.splitlines())
    rng = random.Random(path.name)
    for url_path in urls_for(robots, rng):
        url = HOST + url_path
        for agent in AGENTS:
            ours = robots.check(agent, url).allowed
            tally.checks += 1
            for oracle in ("protego", "urllib"):
                if oracle == "protego":
                    theirs = protego.can_fetch(url, agent)
                else:
                    theirs = legacy.can_fetch(agent, url)
                if theirs == ours:
                    tally.agree[oracle] += 1
                    continue
                if oracle == "protego":
                    cls = _protego_class(robots, protego, agent, url_path)
                else:
                    cls = _urllib_class(robots, agent)
                tally.classes[oracle][cls] += 1
                shown = tally.examples[(oracle, cls)]
                if len(shown) < show:
                    verdict = robots.check(agent, url)
                    shown.append(
                        f"{path.name} agent={agent} {url_path} crawlkit="
                        f"{'allow' if ours else 'deny'} ({verdict.rule})"
                    )


def report(tally: Tally) -> None:
    t = tally
    print(f"files: {t.files} (not robots.txt at all, e.g. HTML: {t.not_robots})")
    print(f"parse failures: {len(t.parse_failures)}")
    for line in t.parse_failures[:20]:
        print(f"  {line}")
    print(f"groups: {t.groups}, rules: {t.rules}, malformed rules read: {len(t.malformed)}")
    for line in t.malformed[:20]:
        print(f"  {line}")
    t.times.sort(reverse=True)
    print("slowest parses (parse + compile for 3 agents):")
    for seconds, name, size in t.times[:5]:
        print(f"  {seconds * 1000:8.1f} ms  {size:>8} bytes  {name}")
    print(f"URL checks: {t.checks}")
    for oracle in ("protego", "urllib"):
        agree = t.agree[oracle]
        print(f"{oracle}: agrees on {agree} ({100 * agree / max(t.checks, 1):.2f}%)")
        for cls, count in t.classes[oracle].most_common():
            print(f"  {count:7}  {cls}")
            for example in t.examples[(oracle, cls)]:
                print(f"           {example}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path, help="a folder of robots.txt files")
    ap.add_argument("--show", type=int, default=3, help="examples per class (3)")
    ap.add_argument("--only", help="only files whose name matches this regex")
    args = ap.parse_args(argv)
    files = sorted(p for p in args.dir.iterdir() if p.is_file())
    if args.only:
        files = [p for p in files if re.search(args.only, p.name)]
    if not files:
        sys.exit(f"bench/real_robots.py: no files in {args.dir}")
    tally = Tally()
    for path in files:
        run_file(path, tally, args.show)
    report(tally)


if __name__ == "__main__":
    main()
