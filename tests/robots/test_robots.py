"""robots.txt by RFC 9309: a table of cases, each with the deciding rule and the clause
that decides it; the fetch policy; property tests against a slow reference matcher."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawlkit.errors import UsageError
from crawlkit.robots import (
    MAX_ROBOTS_BYTES,
    RobotsEntry,
    RobotsPolicy,
    RobotsTxt,
    Verdict,
    agent_token,
    normalize_path,
    normalize_pattern,
    remove_dot_segments,
    rules_for_status,
)

DATA = Path(__file__).parents[1] / "data" / "robots"


@dataclass(frozen=True)
class Case:
    name: str
    robots: str  # the file (str, encoded as UTF-8 unless the case gives bytes)
    agent: str
    url: str
    allowed: bool
    rule: str | None  # the deciding line, as Verdict.rule reports it
    why: str  # the RFC 9309 clause (or documented quirk) that decides it


GROUPS = """\
User-agent: *
Disallow: /all/

User-agent: FooBot
Disallow: /foo-only/
"""

CASES = [
    # ---- group selection and merging (RFC 9309 2.2.1)
    Case(
        "specific group beats *",
        GROUPS,
        "FooBot",
        "/all/x",
        True,
        None,
        "2.2.1: a crawler obeys only the group matching its product token",
    ),
    Case(
        "specific group applies",
        GROUPS,
        "FooBot",
        "/foo-only/x",
        False,
        "Disallow: /foo-only/",
        "2.2.1: the matching group's rules",
    ),
    Case(
        "token match is case-insensitive",
        GROUPS,
        "foobot",
        "/foo-only/x",
        False,
        "Disallow: /foo-only/",
        "2.2.1: product tokens compared case-insensitively",
    ),
    Case(
        "UA header reduced to its token",
        GROUPS,
        "FooBot/1.2 (+http://foo.example)",
        "/foo-only/",
        False,
        "Disallow: /foo-only/",
        "2.2.1: the product token is the name before '/'",
    ),
    Case(
        "unmatched agent falls back to *",
        GROUPS,
        "OtherBot",
        "/all/x",
        False,
        "Disallow: /all/",
        "2.2.1: no matching group, so the '*' group",
    ),
    Case(
        "no group and no * means no rules",
        "User-agent: FooBot\nDisallow: /\n",
        "OtherBot",
        "/x",
        True,
        None,
        "2.2.1: no matching group and no '*' group: no rules apply",
    ),
    Case(
        "version in user-agent line ignored",
        "User-agent: FooBot/1.2\nDisallow: /v/\n",
        "foobot",
        "/v/1",
        False,
        "Disallow: /v/",
        "2.2.1: a user-agent value's token is its leading [A-Za-z_-] run",
    ),
    Case(
        "token must match exactly, not as prefix",
        "User-agent: Foo\nDisallow: /\n",
        "FooBot",
        "/x",
        True,
        None,
        "2.2.1: the token must match exactly ('foo' is not 'foobot')",
    ),
    Case(
        "groups for one token merge",
        "User-agent: FooBot\nDisallow: /a/\n\nUser-agent: *\nDisallow: /\n\n"
        "User-agent: foobot\nDisallow: /b/\n",
        "FooBot",
        "/b/x",
        False,
        "Disallow: /b/",
        "2.2.1: several groups for the same token are combined",
    ),
    Case(
        "merged groups keep the first's rules",
        "User-agent: FooBot\nDisallow: /a/\n\nUser-agent: foobot\nAllow: /b/\n",
        "FooBot",
        "/a/x",
        False,
        "Disallow: /a/",
        "2.2.1: combined, not replaced",
    ),
    Case(
        "several user-agent lines share one group",
        "User-agent: A\nUser-agent: FooBot\nUser-agent: B\nDisallow: /shared/\n",
        "FooBot",
        "/shared/1",
        False,
        "Disallow: /shared/",
        "2.1: a group starts with one or more user-agent lines",
    ),
    Case(
        "user-agent after a rule starts a new group",
        "User-agent: A\nDisallow: /a/\nUser-agent: FooBot\nDisallow: /f/\n",
        "FooBot",
        "/a/1",
        True,
        None,
        "2.1: a group ends at the next user-agent line",
    ),
    Case(
        "unknown line does not end a group",
        "User-agent: FooBot\nNoindex: /x\nFoo: bar\nDisallow: /after/\n",
        "FooBot",
        "/after/",
        False,
        "Disallow: /after/",
        "2.2.4: other records are ignored, they do not end the group",
    ),
    Case(
        "blank line does not end a group",
        "User-agent: FooBot\n\nDisallow: /gap/\n",
        "FooBot",
        "/gap/",
        False,
        "Disallow: /gap/",
        "2.2 grammar: empty lines may occur inside a group",
    ),
    Case(
        "sitemap line does not end a group",
        "User-agent: FooBot\nSitemap: http://x/s.xml\nDisallow: /s/\n",
        "FooBot",
        "/s/",
        False,
        "Disallow: /s/",
        "2.2.4: sitemap lines are not group members",
    ),
    Case(
        "crawl-delay does not end the user-agent lines",
        "User-agent: A\nCrawl-delay: 5\nUser-agent: FooBot\nDisallow: /cd/\n",
        "FooBot",
        "/cd/",
        False,
        "Disallow: /cd/",
        "2.2.4: other records do not interfere",
    ),
    Case(
        "rules before any user-agent ignored",
        "Disallow: /orphan/\nUser-agent: *\nDisallow: /x/\n",
        "FooBot",
        "/orphan/",
        True,
        None,
        "2.1: rules belong to a group; an orphan rule has none",
    ),
    Case(
        "star with trailing text is still *",
        "User-agent: * # everyone\nDisallow: /s/\n",
        "FooBot",
        "/s/",
        False,
        "Disallow: /s/",
        "2.2.1 and 2.2 comments: '*' then a comment",
    ),
    # ---- Allow / Disallow, wildcards and $ (2.2.2, 2.2.3)
    Case(
        "plain prefix",
        "User-agent: *\nDisallow: /fish\n",
        "x",
        "/fish.html",
        False,
        "Disallow: /fish",
        "2.2.2: a path matches a rule that is its prefix",
    ),
    Case(
        "prefix is case-sensitive",
        "User-agent: *\nDisallow: /fish\n",
        "x",
        "/Fish",
        True,
        None,
        "2.2.2: paths compare octet by octet",
    ),
    Case(
        "* matches any run",
        "User-agent: *\nDisallow: /*.php\n",
        "x",
        "/folder/index.php?x=1",
        False,
        "Disallow: /*.php",
        "2.2.3: '*' is any sequence",
    ),
    Case(
        "* matches the empty run",
        "User-agent: *\nDisallow: /fish*\n",
        "x",
        "/fish",
        False,
        "Disallow: /fish*",
        "2.2.3: '*' may match nothing",
    ),
    Case(
        "$ anchors the end",
        "User-agent: *\nDisallow: /*.php$\n",
        "x",
        "/a.php?x",
        True,
        None,
        "2.2.3: '$' is the end of the path",
    ),
    Case(
        "$ anchors: exact end",
        "User-agent: *\nDisallow: /*.php$\n",
        "x",
        "/a.php",
        False,
        "Disallow: /*.php$",
        "2.2.3: '$' matches at the end",
    ),
    Case(
        "$ on a literal path",
        "User-agent: *\nDisallow: /fish$\n",
        "x",
        "/fish/",
        True,
        None,
        "2.2.3: '/fish$' matches only '/fish'",
    ),
    Case(
        "pattern may start with *",
        "User-agent: *\nDisallow: *private\n",
        "x",
        "/a/private/b",
        False,
        "Disallow: *private",
        "2.2.3: '*' anywhere, also first",
    ),
    Case(
        "query is part of the path",
        "User-agent: *\nDisallow: /search?q=\n",
        "x",
        "http://e.com/search?q=cats",
        False,
        "Disallow: /search?q=",
        "2.2.2: the path includes the query",
    ),
    Case(
        "fragment is not",
        "User-agent: *\nDisallow: /a$\n",
        "x",
        "http://e.com/a#top",
        False,
        "Disallow: /a$",
        "2.2.2 / RFC 3986: the fragment is never sent",
    ),
    Case(
        "several wildcards",
        "User-agent: *\nDisallow: /*a*b*c$\n",
        "x",
        "/xaybzc",
        False,
        "Disallow: /*a*b*c$",
        "2.2.3: each '*' independently",
    ),
    Case(
        "several wildcards, order matters",
        "User-agent: *\nDisallow: /*a*b*c$\n",
        "x",
        "/xcybza",
        True,
        None,
        "2.2.3: pieces must appear in order",
    ),
    # ---- longest match and ties (2.2.2)
    Case(
        "longest match wins (allow)",
        "User-agent: *\nDisallow: /\nAllow: /public/\n",
        "x",
        "/public/x",
        True,
        "Allow: /public/",
        "2.2.2: the most specific (longest) rule",
    ),
    Case(
        "longest match wins (disallow)",
        "User-agent: *\nAllow: /p\nDisallow: /page/\n",
        "x",
        "/page/1",
        False,
        "Disallow: /page/",
        "2.2.2: longest match, whatever the order",
    ),
    Case(
        "order in file does not matter",
        "User-agent: *\nAllow: /page/\nDisallow: /p\n",
        "x",
        "/page/1",
        True,
        "Allow: /page/",
        "2.2.2: longest match, not first match",
    ),
    Case(
        "tie: allow wins",
        "User-agent: *\nDisallow: /page\nAllow: /page\n",
        "x",
        "/page",
        True,
        "Allow: /page",
        "2.2.2: equivalent allow and disallow: allow",
    ),
    Case(
        "wildcard counts its length",
        "User-agent: *\nAllow: /fol\nDisallow: /*.html\n",
        "x",
        "/folder/a.html",
        False,
        "Disallow: /*.html",
        "2.2.2: length in octets of the pattern ('*' counts)",
    ),
    Case(
        "$ counts too: allow /$ vs disallow /",
        "User-agent: *\nDisallow: /\nAllow: /$\n",
        "x",
        "/",
        True,
        "Allow: /$",
        "2.2.2: '/$' (2 octets) beats '/' (1)",
    ),
    Case(
        "…and /$ does not allow deeper paths",
        "User-agent: *\nDisallow: /\nAllow: /$\n",
        "x",
        "/page",
        False,
        "Disallow: /",
        "2.2.3: '$' anchors",
    ),
    Case(
        "tie with wildcards: allow wins",
        "User-agent: *\nDisallow: /*.gif\nAllow: /a*.gif\n",
        "x",
        "/a.gif",
        True,
        "Allow: /a*.gif",
        "2.2.2: equal lengths (7), allow",
    ),
    Case(
        "empty disallow allows all",
        "User-agent: *\nDisallow:\n",
        "x",
        "/anything",
        True,
        None,
        "2.2.2: an empty pattern matches nothing",
    ),
    Case(
        "empty disallow beside a rule",
        "User-agent: *\nDisallow:\nDisallow: /x\n",
        "x",
        "/x/1",
        False,
        "Disallow: /x",
        "2.2.2: the empty rule does not clear the others",
    ),
    Case(
        "/robots.txt always allowed",
        "User-agent: *\nDisallow: /\n",
        "x",
        "http://e.com/robots.txt",
        True,
        None,
        "2.2.2: /robots.txt is implicitly allowed",
    ),
    # ---- percent-encoding (2.2.2)
    Case(
        "UTF-8 pattern vs escaped URL",
        "User-agent: *\nDisallow: /foo/bar/ツ\n",
        "x",
        "/foo/bar/%E3%83%84",
        False,
        "Disallow: /foo/bar/ツ",
        "2.2.2: non-ASCII is percent-encoded as UTF-8 before comparing",
    ),
    Case(
        "escaped pattern vs UTF-8 URL",
        "User-agent: *\nDisallow: /foo/bar/%E3%83%84\n",
        "x",
        "/foo/bar/ツ",
        False,
        "Disallow: /foo/bar/%E3%83%84",
        "2.2.2: both sides encoded",
    ),
    Case(
        "escape case ignored",
        "User-agent: *\nDisallow: /foo/bar/%e3%83%84\n",
        "x",
        "/foo/bar/%E3%83%84",
        False,
        "Disallow: /foo/bar/%e3%83%84",
        "RFC 3986 2.1: hex digits in escapes are case-insensitive",
    ),
    Case(
        "escaped unreserved decoded",
        "User-agent: *\nDisallow: /foo/bar/%62%61%7A\n",
        "x",
        "/foo/bar/baz",
        False,
        "Disallow: /foo/bar/%62%61%7A",
        "2.2.2: escapes of unreserved characters are decoded",
    ),
    Case(
        "escaped unreserved in URL decoded",
        "User-agent: *\nDisallow: /baz\n",
        "x",
        "/%62az",
        False,
        "Disallow: /baz",
        "2.2.2: the URL side is decoded too",
    ),
    Case(
        "escaped slash stays escaped",
        "User-agent: *\nDisallow: /a/b\n",
        "x",
        "/a%2Fb",
        True,
        None,
        "2.2.2: reserved characters are not decoded ('%2F' is not '/')",
    ),
    Case(
        "literal * in URL needs %2A",
        "User-agent: *\nDisallow: /file-%2A.html\n",
        "x",
        "/file-*.html",
        False,
        "Disallow: /file-%2A.html",
        "2.2.3: to match '*' verbatim, a pattern percent-encodes it",
    ),
    Case(
        "literal $ in URL needs %24",
        "User-agent: *\nDisallow: /foo-%24\n",
        "x",
        "/foo-$",
        False,
        "Disallow: /foo-%24",
        "2.2.3: '%24' matches a literal '$'",
    ),
    Case(
        "$ inside a pattern is literal",
        "User-agent: *\nDisallow: /a$b\n",
        "x",
        "/a$b",
        False,
        "Disallow: /a$b",
        "2.2.3: only a final '$' anchors",
    ),
    Case(
        "space escaped on both sides",
        "User-agent: *\nDisallow: /a b\n",
        "x",
        "/a%20b/c",
        False,
        "Disallow: /a b",
        "2.2.2: characters not allowed in URIs are encoded",
    ),
    # the five rows of the table in RFC 9309 2.2.2, each as a rule and the other spelling
    Case(
        "RFC table row 1",
        "User-agent: *\nDisallow: /foo/bar?baz=quz\n",
        "x",
        "/foo/bar?baz=quz",
        False,
        "Disallow: /foo/bar?baz=quz",
        "2.2.2 table, row 1",
    ),
    Case(
        "RFC table row 2",
        "User-agent: *\nDisallow: /foo/bar?baz=https://foo.bar\n",
        "x",
        "https://e.com/foo/bar?baz=https%3A%2F%2Ffoo.bar",
        False,
        "Disallow: /foo/bar?baz=https://foo.bar",
        "2.2.2 table, row 2: reserved characters in the query, escaped or not",
    ),
    Case(
        "RFC table row 2, reversed",
        "User-agent: *\nDisallow: /foo/bar?baz=https%3A%2F%2Ffoo.bar\n",
        "x",
        "/foo/bar?baz=https://foo.bar",
        False,
        "Disallow: /foo/bar?baz=https%3A%2F%2Ffoo.bar",
        "2.2.2 table, row 2, the other way round",
    ),
    Case(
        "RFC table row 3",
        "User-agent: *\nDisallow: /foo/bar/ツ\n",
        "x",
        "/foo/bar/%e3%83%84",
        False,
        "Disallow: /foo/bar/ツ",
        "2.2.2 table, row 3",
    ),
    Case(
        "RFC table row 4",
        "User-agent: *\nDisallow: /foo/bar/%E3%83%84\n",
        "x",
        "/foo/bar/%E3%83%84",
        False,
        "Disallow: /foo/bar/%E3%83%84",
        "2.2.2 table, row 4",
    ),
    Case(
        "RFC table row 5",
        "User-agent: *\nDisallow: /foo/bar/%62%61%7A\n",
        "x",
        "/foo/bar/%62%61%7A",
        False,
        "Disallow: /foo/bar/%62%61%7A",
        "2.2.2 table, row 5",
    ),
    # ---- file format (2.2, 2.3)
    Case(
        "BOM ignored",
        "\ufeffUser-agent: *\nDisallow: /bom/\n",
        "x",
        "/bom/",
        False,
        "Disallow: /bom/",
        "2.3: UTF-8, with or without byte-order mark",
    ),
    Case(
        "CRLF line ends",
        "User-agent: *\r\nDisallow: /crlf/\r\nAllow: /crlf/ok\r\n",
        "x",
        "/crlf/ok",
        True,
        "Allow: /crlf/ok",
        "2.2 grammar: EOL is CR, LF or CRLF",
    ),
    Case(
        "CR line ends",
        "User-agent: *\rDisallow: /cr/\rAllow: /cr/ok\r",
        "x",
        "/cr/x",
        False,
        "Disallow: /cr/",
        "2.2 grammar: EOL is CR, LF or CRLF",
    ),
    Case(
        "comment after a rule",
        "User-agent: *\nDisallow: /c/ # not /c/x\n",
        "x",
        "/c/x",
        False,
        "Disallow: /c/",
        "2.2: '#' starts a comment",
    ),
    Case(
        "keys are case-insensitive",
        "USER-AGENT: *\nDISALLOW: /k/\n",
        "x",
        "/k/",
        False,
        "Disallow: /k/",
        "2.2 grammar: keys are case-insensitive",
    ),
    Case(
        "white space around the colon",
        "User-agent :  *\nDisallow  :   /w/  \n",
        "x",
        "/w/",
        False,
        "Disallow: /w/",
        "2.2 grammar: *WS around ':' and the value",
    ),
    Case(
        "quirk: missing colon",
        "User-agent: *\nDisallow /nocolon/\n",
        "x",
        "/nocolon/",
        False,
        "Disallow: /nocolon/",
        "quirk (as Google): 'key value' without ':'",
    ),
    Case(
        "quirk: misspelt key",
        "User-agent: *\nDissallow: /typo/\n",
        "x",
        "/typo/",
        False,
        "Disallow: /typo/",
        "quirk (as Google): common misspellings accepted",
    ),
    Case(
        "pattern without / ignored",
        "User-agent: *\nDisallow: private\n",
        "x",
        "/private",
        True,
        None,
        "2.2 grammar: path-pattern starts with '/' (or '*')",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rfc9309_case(case: Case) -> None:
    robots = RobotsTxt.parse(case.robots.encode("utf-8"))
    verdict = robots.check(case.agent, case.url)
    assert verdict == Verdict(case.allowed, case.rule), case.why


def _cases_markdown() -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", "⏎").replace("\r", "␍")

    rows = [
        "# RFC 9309 cases",
        "",
        "Generated from `CASES` in tests/robots/test_robots.py (each row is a test). Update with",
        "`CRAWLKIT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/robots/test_robots.py -k markdown`.",
        "⏎ is a line feed, ␍ a carriage return in the robots.txt column.",
        "",
        "| case | robots.txt | agent | URL | allowed | deciding rule | why |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in CASES:
        rows.append(
            f"| {cell(c.name)} | `{cell(c.robots)}` | `{cell(c.agent)}` | `{cell(c.url)}` "
            f"| {'yes' if c.allowed else 'no'} | {cell(c.rule or '(none)')} | {cell(c.why)} |"
        )
    rows += [
        "",
        "## Status of the robots.txt fetch (RobotsPolicy)",
        "",
        "The file is `" + cell(GOOD.decode()) + "`; status 0 stands for a network error.",
        "",
        "| status | /private/a allowed | /public allowed | why |",
        "|---|---|---|---|",
    ]
    for status, private, public, why in STATUS_CASES:
        yes = {True: "yes", False: "no"}
        rows.append(f"| {status} | {yes[private]} | {yes[public]} | {cell(why)} |")
    return "\n".join(rows) + "\n"


def test_case_table_markdown_is_current() -> None:
    """The committed table (tests/data/robots/rfc9309-cases.md) matches CASES."""
    path = DATA / "rfc9309-cases.md"
    text = _cases_markdown()
    if os.environ.get("CRAWLKIT_UPDATE_GOLDEN"):
        path.write_text(text, "utf-8")
    assert path.read_text("utf-8") == text, "regenerate with CRAWLKIT_UPDATE_GOLDEN=1"


def test_case_table_covers_both_outcomes_and_every_clause() -> None:
    assert {c.allowed for c in CASES} == {True, False}
    assert len({c.name for c in CASES}) == len(CASES)
    for clause in ("2.1", "2.2.1", "2.2.2", "2.2.3", "2.3", "quirk"):
        assert any(clause in c.why for c in CASES), clause


# ---- file format details beyond the table


LAYOUT = (
    "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\n"
    "disallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\n"
    "allow: /z/\ndisallow: /\n"
)


@pytest.mark.parametrize(
    ("agent", "path", "allowed"),
    [
        ("FooBot", "/x/b", True),
        ("FooBot", "/z/d", True),
        ("FooBot", "/y/c", False),
        ("FooBot", "/foo/bar/", False),  # the orphan allow before any group is ignored
        ("BarBot", "/y/c", True),
        ("BarBot", "/w/a", True),  # blank lines keep the group
        ("BarBot", "/z/d", False),
        ("BazBot", "/z/d", True),  # BazBot shares the second FooBot group
    ],
)
def test_group_layout(agent: str, path: str, allowed: bool) -> None:
    assert RobotsTxt.parse(LAYOUT.encode()).check(agent, path).allowed is allowed


@pytest.mark.parametrize(
    ("rule", "path", "allowed"),
    [
        ("/fish*", "/fish", True),
        ("/fish*", "/fishheads/yummy.html", True),
        ("/fish*", "/Fish.asp", False),
        ("/fish*", "/catfish", False),
        ("/fish/", "/fish/?id=anything", True),
        ("/fish/", "/fish", False),
        ("/*.php", "/folder/any.php.file.html", True),
        ("/*.php", "/windows.PHP", False),
        ("/*.php$", "/folder/filename.php", True),
        ("/*.php$", "/filename.php?x", False),
        ("/*.php$", "/filename.php5", False),
        ("/fish*.php", "/fishheads/catfish.php?p", True),
        ("/foo/*/qux", "/foo//qux", True),
        ("/foo/*/qux", "/foo/qux", False),
    ],
)
def test_allow_patterns_under_disallow_all(rule: str, path: str, allowed: bool) -> None:
    robots = RobotsTxt.parse(f"User-agent: FooBot\nDisallow: /\nAllow: {rule}\n".encode())
    assert robots.check("FooBot", path).allowed is allowed


def test_invalid_utf8_bytes_match_the_same_bytes_escaped() -> None:
    robots = RobotsTxt.parse(b"User-agent: *\nDisallow: /caf\xe9\n")
    assert robots.check("x", "/caf%E9") == Verdict(False, "Disallow: /caf%E9")  # shown escaped
    assert robots.check("x", "/cafe").allowed
    orjson.dumps(robots.to_dict())


def test_crawl_delay_per_group_and_sitemaps_global() -> None:
    robots = RobotsTxt.parse(
        b"Sitemap: http://e.com/a.xml\nUser-agent: FooBot\nCrawl-delay: 2.5\nDisallow: /f\n"
        b"Sitemap: http://e.com/b.xml\nUser-agent: *\nCrawl-delay: soon\nDisallow: /x\n"
        b"User-agent: FooBot\nCrawl-delay: 4\n"
    )
    assert robots.crawl_delay("FooBot/1.0") == 4.0  # merged groups: the larger delay
    assert robots.crawl_delay("other") is None  # "soon" is not a number: ignored
    assert robots.sitemaps == ["http://e.com/a.xml", "http://e.com/b.xml"]
    assert robots.check("other", "/x").rule == "Disallow: /x"
    assert any("crawl-delay" in why for _, _, why in robots.ignored)


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "", "1e400"])
def test_crawl_delay_nonsense_ignored(value: str) -> None:
    robots = RobotsTxt.parse(f"User-agent: *\nCrawl-delay: {value}\n".encode())
    assert robots.crawl_delay("x") is None


def test_long_file_rules_after_400_kib_apply() -> None:
    filler = b"# " + b"x" * 98 + b"\n"
    body = b"User-agent: *\n" + filler * 4200 + b"Disallow: /late/\n"  # ~420 KB in
    assert len(body) > 400 * 1024
    robots = RobotsTxt.parse(body)
    assert robots.check("x", "/late/1") == Verdict(False, "Disallow: /late/")
    assert not robots.truncated


def test_beyond_512_kib_is_not_parsed_and_a_cut_line_is_dropped() -> None:
    head = b"User-agent: *\n" + b"Disallow: /early/\n"
    pad = b"#" * (MAX_ROBOTS_BYTES - len(head) - 12) + b"\n"
    cut = b"Disallow: /late-and-long/\n"  # starts before 512 KiB, ends after
    body = head + pad + cut + b"Disallow: /after/\n"
    robots = RobotsTxt.parse(body)
    assert robots.truncated
    assert robots.check("x", "/early/") == Verdict(False, "Disallow: /early/")
    # The cut line would read "Disallow: /lat" if it were kept half; it is dropped whole.
    assert robots.check("x", "/late") == Verdict(True, None)
    assert robots.check("x", "/after/") == Verdict(True, None)


def test_huge_file_parses_quickly_and_matches() -> None:
    lines = [f"Disallow: /d{i}/x{i * 7}/" for i in range(20000)]
    body = ("User-agent: *\n" + "\n".join(lines) + "\nAllow: /d5/x35/ok\n").encode()
    robots = RobotsTxt.parse(body)
    assert robots.check("x", "/d19999/x139993/a") == Verdict(False, "Disallow: /d19999/x139993/")
    assert robots.check("x", "/d5/x35/ok") == Verdict(True, "Allow: /d5/x35/ok")
    assert robots.check("x", "/d5/x3") == Verdict(True, None)


def test_pathological_patterns_do_not_backtrack() -> None:
    pattern = "/" + "*a" * 30 + "*b"
    robots = RobotsTxt.parse(f"User-agent: *\nDisallow: {pattern}\n".encode())
    assert robots.check("x", "/" + "a" * 1900) == Verdict(True, None)
    assert robots.check("x", "/" + "a" * 1900 + "b").allowed is False


def test_deeply_nested_prefixes_fall_back_correctly() -> None:
    # 900 rules that are prefixes of each other: too many (and too deeply nested) for
    # the radix regex, so the matcher probes its table once per distinct length.
    lines = [f"{'Allow' if i % 2 else 'Disallow'}: /{'a' * i}" for i in range(1, 900)]
    robots = RobotsTxt.parse(("User-agent: *\n" + "\n".join(lines)).encode())
    assert robots.check("x", "/" + "a" * 10) == Verdict(False, "Disallow: /" + "a" * 10)
    assert robots.check("x", "/" + "a" * 9 + "b") == Verdict(True, "Allow: /" + "a" * 9)
    assert robots.check("x", "/" + "a" * 2000) == Verdict(True, "Allow: /" + "a" * 899)


def test_very_long_literal_patterns() -> None:
    long = "/" + "b" * 1500  # past the radix regex's key limit
    robots = RobotsTxt.parse(f"User-agent: *\nDisallow: {long}\nAllow: {long}c$\n".encode())
    assert robots.check("x", long + "cd") == Verdict(False, f"Disallow: {long}")
    assert robots.check("x", long + "c") == Verdict(True, f"Allow: {long}c$")
    assert robots.check("x", long[:-1]) == Verdict(True, None)


def test_many_wildcard_rules_beyond_the_compiled_ones() -> None:
    lines = [f"Disallow: /*x{i}$" for i in range(3000)] + ["Allow: /*keep*x7$"]
    robots = RobotsTxt.parse(("User-agent: *\n" + "\n".join(lines)).encode())
    assert robots.check("x", "/a/x2999") == Verdict(False, "Disallow: /*x2999$")
    assert robots.check("x", "/a/x7") == Verdict(False, "Disallow: /*x7$")
    assert robots.check("x", "/keep/x7") == Verdict(True, "Allow: /*keep*x7$")
    assert robots.check("x", "/a/x3000") == Verdict(True, None)


def test_prepare_compiles_once_and_returns_self() -> None:
    robots = RobotsTxt.parse(b"User-agent: *\nDisallow: /x\n")
    assert robots.prepare("FooBot/1") is robots
    view = robots._views["FooBot/1"]
    assert view is not None and robots.check("FooBot/1", "/x").rule == "Disallow: /x"
    assert robots._views["FooBot/1"] is view


def test_agent_tokens() -> None:
    assert agent_token("FooBot/1.2 (+http://x)") == "foobot"
    assert agent_token("Foo_Bar-baz") == "foo_bar-baz"
    assert agent_token("* ") == "*"
    assert agent_token("*bot") == ""
    assert agent_token("") == ""


def test_normalisation_is_idempotent_and_symmetric() -> None:
    for text in [
        "/a%7e/%e3%83%84/ツ?q=a b&x=%2f",
        "/%",
        "/%zz",
        "/a*b$",
        "/\x00\x7f",
        "/a%2F?b%2F%3a%26",
    ]:
        once = normalize_path(text)
        assert normalize_path(once) == once
        assert re.fullmatch(r"[\x21-\x7e]*", once)
    assert normalize_pattern("/a*b$") == "/a*b$"
    assert normalize_pattern("/a$b") == "/a%24b"
    assert normalize_path("/a~%7E%41") == "/a~~A"
    assert normalize_path("/a%2f?b=%2f%3a%26%3d") == "/a%2F?b=/:%26%3D"


def test_allow_all_and_disallow_all() -> None:
    assert RobotsTxt.allow_all().check("x", "/a") == Verdict(True, None)
    deny = RobotsTxt.disallow_all()
    assert deny.check("x", "/a") == Verdict(False, None)
    assert deny.check("x", "http://e.com/robots.txt") == Verdict(True, None)
    assert deny.crawl_delay("x") is None and deny.sitemaps == []


def test_typical_file_fixture() -> None:
    robots = RobotsTxt.parse((DATA / "typical.txt").read_bytes())
    assert robots.check("Mozilla/5.0 BadBot", "/") == Verdict(True, None)  # token "mozilla"
    assert robots.check("EvilScraper/2.0", "/") == Verdict(False, "Disallow: /")
    assert robots.check("FooBot/3", "/private/open/x") == Verdict(True, "Allow: /private/open/")
    assert robots.check("FooBot/3", "/a.php") == Verdict(False, "Disallow: /*.php$")
    assert robots.check("other", "/cart/") == Verdict(False, "Disallow: /cart/")
    assert robots.check("other", "/x?sessionid=1") == Verdict(False, "Disallow: /*?sessionid=")
    assert robots.check("other", "/ツ/a") == Verdict(False, "Disallow: /%E3%83%84/")
    assert robots.crawl_delay("other") == 2.0 and robots.crawl_delay("foobot") == 1.5
    assert len(robots.sitemaps) == 2


# ---- the fetch policy (RFC 9309 2.3, 2.4; docs/design.md invariant 3)

GOOD = b"User-agent: *\nDisallow: /private/\n"
T0 = 1_700_000_000.0


# (status, /private/a allowed, /public allowed, why) for GOOD fetched with that status
STATUS_CASES = [
    (200, False, True, "2.3.1.1: 2xx: parse the rules"),
    (204, True, True, "2.3.1.1: 2xx with an empty body: no rules"),
    (301, True, True, "2.3.1.2: more redirects than followed: unavailable, allow all"),
    (404, True, True, "2.3.1.3: 4xx: unavailable, allow all"),
    (401, True, True, "2.3.1.3: 4xx (also 401/403): allow all"),
    (410, True, True, "2.3.1.3: 4xx: allow all"),
    (429, False, False, "2.3.1.4 + docs/design.md invariant 3: 429 like 5xx: disallow all"),
    (500, False, False, "2.3.1.4: 5xx: unreachable, disallow all"),
    (503, False, False, "2.3.1.4: 5xx: disallow all"),
    (0, False, False, "2.3.1.4: network error (on_error): disallow all"),
]


@pytest.mark.parametrize(("status", "allowed_private", "allowed_public", "why"), STATUS_CASES)
def test_status_codes(status: int, allowed_private: bool, allowed_public: bool, why: str) -> None:
    policy = RobotsPolicy()
    if status == 0:
        entry = policy.on_error("connection refused", T0)
    else:
        entry = policy.on_response(status, GOOD if status != 204 else b"", T0)
    rules = entry.rules()
    assert rules.check("x", "/private/a").allowed is allowed_private, why
    assert rules.check("x", "/public").allowed is allowed_public, why
    assert rules.check("x", "/robots.txt").allowed


def test_error_page_body_of_a_404_is_never_parsed() -> None:
    entry = RobotsPolicy().on_response(404, b"User-agent: *\nDisallow: /\n", T0)
    assert entry.rules().check("x", "/a").allowed and entry.body is None


def test_network_error_disallows_and_is_cached_for_error_retry() -> None:
    policy = RobotsPolicy(error_retry=600)
    entry = policy.on_error("connect timeout", T0)
    assert entry.status is None and "connect timeout" in (entry.error or "")
    assert entry.rules().check("x", "/a") == Verdict(False, None)
    assert entry.expires_at == T0 + 600
    assert policy.is_fresh(entry, T0 + 599) and not policy.is_fresh(entry, T0 + 600)


def test_5xx_uses_a_good_copy_up_to_30_days_old() -> None:
    policy = RobotsPolicy()
    good = policy.on_response(200, GOOD, T0)
    later = policy.on_response(503, b"<html>down</html>", T0 + 10 * 86400, previous=good)
    assert later.status == 503 and later.body == GOOD and later.good_at == T0
    assert later.rules().check("x", "/public").allowed  # the good copy stands in
    assert not later.rules().check("x", "/private/").allowed
    assert later.expires_at == T0 + 10 * 86400 + 3600
    # The stand-in chains: another failure 29 days after the good fetch still uses it.
    again = policy.on_error("reset", T0 + 29.9 * 86400, previous=later)
    assert again.body == GOOD and again.expires_at <= T0 + 30 * 86400
    # After 30 days the copy is too old: disallow all.
    stale = policy.on_response(500, b"", T0 + 31 * 86400, previous=again)
    assert stale.body is None and stale.rules().check("x", "/public") == Verdict(False, None)


def test_4xx_after_a_good_copy_means_no_rules() -> None:
    policy = RobotsPolicy()
    good = policy.on_response(200, GOOD, T0)
    gone = policy.on_response(404, b"", T0 + 86400, previous=good)
    assert gone.rules().check("x", "/private/").allowed


def test_cache_never_longer_than_24_hours() -> None:
    policy = RobotsPolicy(max_age=7 * 86400)
    entry = policy.on_response(200, GOOD, T0)
    assert entry.expires_at == T0 + 86400
    assert policy.is_fresh(entry, T0 + 86399) and not policy.is_fresh(entry, T0 + 86400)
    forged = RobotsEntry(200, T0, T0 + 9 * 86400, GOOD, T0, None)  # e.g. read from disk
    assert not policy.is_fresh(forged, T0 + 2 * 86400)
    assert not policy.is_fresh(entry, T0 - 3600)  # clock far behind the fetch


def test_too_many_redirects_is_cached_as_a_failure() -> None:
    policy = RobotsPolicy(error_retry=900)
    entry = policy.on_response(302, b"", T0)
    assert entry.rules().check("x", "/a").allowed and entry.expires_at == T0 + 900
    assert policy.max_redirects >= 5


def test_body_kept_only_to_the_parse_limit() -> None:
    entry = RobotsPolicy().on_response(200, b"#" * (2 * MAX_ROBOTS_BYTES), T0)
    assert entry.body is not None and len(entry.body) == MAX_ROBOTS_BYTES + 1


def test_entry_round_trips_through_json() -> None:
    policy = RobotsPolicy()
    for entry in (
        policy.on_response(200, GOOD + b"\xff\x00", T0),
        policy.on_error("dns", T0),
        policy.on_response(503, b"", T0 + 5, previous=policy.on_response(200, GOOD, T0)),
    ):
        back = RobotsEntry.from_dict(orjson.loads(orjson.dumps(entry.to_dict())))
        assert back == entry
        assert back.rules().check("x", "/private/1") == entry.rules().check("x", "/private/1")


def test_rules_are_cached_on_the_entry() -> None:
    entry = RobotsPolicy().on_response(200, GOOD, T0)
    assert entry.rules() is entry.rules()


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(UsageError):
        RobotsPolicy(max_age=-1)
    with pytest.raises(UsageError):
        rules_for_status(700, b"")


# ---- properties


def _reference(rules: list[tuple[bool, str]], path: str) -> bool:
    """A slow, obviously-right matcher: try every rule, keep the best."""
    best: tuple[tuple[int, bool], bool] | None = None
    target = normalize_path(path)
    for allow, raw in rules:
        pat = normalize_pattern(raw)
        if not pat:
            continue
        anchored = pat.endswith("$")
        body = pat[:-1] if anchored else pat
        rx = ".*".join(re.escape(p) for p in body.split("*")) + (r"\Z" if anchored else "")
        if re.match(rx, target, re.DOTALL):
            prio = (len(pat), allow)
            if best is None or prio > best[0]:
                best = (prio, allow)
    return True if best is None else best[1]


_pattern = st.text(alphabet="/ab*$%2F.?", max_size=8).map(lambda s: "/" + s)
_path = st.text(alphabet="/ab$*%2F.?", max_size=10).map(lambda s: "/" + s)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), _pattern), max_size=12), st.lists(_path, max_size=8))
def test_matcher_agrees_with_reference(rules: list[tuple[bool, str]], paths: list[str]) -> None:
    text = "User-agent: *\n" + "".join(f"{'Allow' if a else 'Disallow'}: {p}\n" for a, p in rules)
    robots = RobotsTxt.parse(text.encode())
    # The same rules as a big group is matched: literal prefixes in a table, and all
    # wildcard rules but one by string search instead of a regex.
    with (
        mock.patch("crawlkit.robots._match._TRIE_MAX_KEYS", 0),
        mock.patch("crawlkit.robots._match._WILD_REGEX_MAX", 1),
    ):
        tabled = RobotsTxt.parse(text.encode())
        tabled.check("bot", "/")
    for path in paths:
        # a server serves "/a/../b" as "/b": rules are matched with the dots resolved
        expected = path in ("/robots.txt",) or _reference(rules, remove_dot_segments(path))
        assert robots.check("bot", path).allowed is expected, (rules, path)
        assert tabled.check("bot", path) == robots.check("bot", path), (rules, path)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.text(max_size=40), st.text(max_size=200))
def test_parse_and_check_never_raise_on_bytes(body: bytes, agent: str, url: str) -> None:
    robots = RobotsTxt.parse(body)
    verdict = robots.check(agent, url)
    assert isinstance(verdict.allowed, bool)
    robots.crawl_delay(agent)
    orjson.dumps(robots.to_dict())


_line = st.one_of(
    st.sampled_from(
        [
            "User-agent: *",
            "User-agent: FooBot/1",
            "user agent: x",
            "Sitemap: s",
            "Crawl-delay: 1",
            "Disallow:",
            "Allow: /",
            "#c",
            "",
            "Disallow /a b",
        ]
    ),
    st.builds(
        lambda k, v: f"{k}: {v}",
        st.sampled_from(["Allow", "Disallow", "dissallow"]),
        st.text(max_size=12),
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_line, max_size=20),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.text(max_size=30),
    st.text(max_size=80),
)
def test_parse_and_check_never_raise_on_robots_like_text(
    lines: list[str], eol: str, agent: str, url: str
) -> None:
    robots = RobotsTxt.parse(eol.join(lines).encode("utf-8", "surrogatepass"))
    assert isinstance(robots.check(agent, url).allowed, bool)
    assert robots.check(agent, "/robots.txt").allowed


# ---- the command line


def test_cli_check_from_stdin_and_args(cli, tmp_path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes(b"User-agent: FooBot\nDisallow: /private/\nAllow: /private/ok\n")
    res = cli(
        "robots",
        "check",
        "--robots",
        str(robots),
        "--agent",
        "FooBot/1.2 (+http://x)",
        input=b"/private/x\nhttp://a.com/private/ok\n\n/pub\n",
    )
    assert res.code == 0, res.stderr
    assert [orjson.loads(line) for line in res.lines] == [
        {"url": "/private/x", "allowed": False, "rule": "Disallow: /private/"},
        {"url": "http://a.com/private/ok", "allowed": True, "rule": "Allow: /private/ok"},
        {"url": "/pub", "allowed": True, "rule": None},
    ]
    res = cli("robots", "check", "--robots", str(robots), "--agent", "foobot", "/private/1")
    assert orjson.loads(res.text)["allowed"] is False


@pytest.mark.parametrize(
    ("status", "allowed"),
    [("200", False), ("404", True), ("503", False), ("429", False), ("301", True)],
)
def test_cli_check_status(cli, tmp_path, status: str, allowed: bool) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes(b"User-agent: *\nDisallow: /p\n")
    res = cli(
        "robots",
        "check",
        "--robots",
        str(robots),
        "--agent",
        "x",
        "--status",
        status,
        "/p",
        "/robots.txt",
    )
    assert res.code == 0, res.stderr
    first, second = (orjson.loads(line) for line in res.lines)
    assert first["allowed"] is allowed and second["allowed"] is True


def test_cli_check_passes_url_records_through(cli, tmp_path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes(b"User-agent: *\nDisallow: /private/\n")
    records = (
        b'{"url": "https://e.com/private/a", "fp": "x", "mine": [1]}\n'
        b"https://e.com/ok\n"
        b'{"url": 5}\n'
        b"{broken\n"
    )
    res = cli("robots", "check", "--robots", str(robots), "--agent", "x", input=records)
    assert res.code == 0, res.stderr
    assert [orjson.loads(line) for line in res.lines] == [
        {
            "url": "https://e.com/private/a",
            "fp": "x",
            "mine": [1],
            "allowed": False,
            "rule": "Disallow: /private/",
        },
        {"url": "https://e.com/ok", "allowed": True, "rule": None},
        {"url": None, "allowed": False, "rule": None, "error": 'not a JSON object with a "url"'},
        {"url": None, "allowed": False, "rule": None, "error": 'not a JSON object with a "url"'},
    ]
    assert "<stdin>:3:" in res.stderr and "<stdin>:4:" in res.stderr


def test_cli_parse(cli) -> None:
    res = cli("robots", "parse", str(DATA / "typical.txt"), "--agent", "FooBot")
    assert res.code == 0, res.stderr
    doc = orjson.loads(res.stdout)
    assert [g["agents"] for g in doc["groups"]] == [["*"], ["badbot", "evilscraper"], ["foobot"]]
    assert doc["selected"]["crawl_delay"] == 1.5
    assert doc["sitemaps"][0] == "https://www.example.com/sitemap_index.xml"
    assert doc["groups"][2]["rules"][0] == {
        "allow": False,
        "pattern": "/private/",
        "normalized": "/private/",
        "line": 115,
        "rule": "Disallow: /private/",
    }


def test_cli_errors(cli, tmp_path) -> None:
    res = cli("robots", "check", "--robots", str(tmp_path / "nope"), "--agent", "x", "/a")
    assert res.code == 1 and "No such file" in res.stderr
    res = cli("robots", "check", "--robots", "-", "--agent", "x", input=b"")
    assert res.code == 2
    res = cli("robots", "check", "--robots", str(DATA / "typical.txt"), "/a")
    assert res.code == 2 and "--agent TOKEN are required" in res.stderr
    res = cli(
        "robots",
        "check",
        "--robots",
        str(DATA / "typical.txt"),
        "--agent",
        "x",
        "--status",
        "999",
        "/a",
    )
    assert res.code == 2 and "100-599" in res.stderr


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://e.com/x/../private/a", False),
        ("http://e.com/x/%2e%2E/private/a", False),
        ("http://e.com/private/./a", False),
        ("/y/../private", True),  # "/private", which "/private/" does not cover
        ("/private/..", True),  # "/"
        ("http://e.com/a/b?next=/x/../private/", True),  # dots in the query are data
        ("http://e.com/.private/a", True),
    ],
)
def test_dot_segments_are_resolved_before_matching(url: str, allowed: bool) -> None:
    robots = RobotsTxt.parse(b"User-agent: *\nDisallow: /private/\n")
    assert robots.check("bot", url).allowed is allowed


def test_check_answers_an_empty_url_argument(tmp_path) -> None:
    # Every argument gets its verdict (Google's test: the empty URL is disallowed by
    # "Disallow: /"); only blank lines of stdin are skipped.
    from conftest import crawlkit

    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /\n")
    out = crawlkit("robots", "check", "--robots", str(robots), "--agent", "FooBot", "", "/a")
    assert out.code == 0, out.stderr
    assert out.text.splitlines() == [
        '{"url":"","allowed":false,"rule":"Disallow: /"}',
        '{"url":"/a","allowed":false,"rule":"Disallow: /"}',
    ]


@pytest.mark.parametrize(
    "body",
    [
        b"\xef\xbbUser-agent: *\nDisallow: /\n",  # the first bytes of a BOM (Google's suite)
        b"\xefUser-agent: *\nDisallow: /\n",
        b"\xef\xbb\xbfUser-agent: *\nDisallow: /\n",
        b"User-agents: *\nDisallow: /\n",  # keys Google reads by their start
        b"User-agent-name: *\nDisallow: /\n",
        b"User-agent: *\nDisallowed: /\n",
        b"User-agent: *\nDisallow-path: /\n",
        b"User-agent: *\nDisallow; /\n",
    ],
)
def test_what_google_reads_as_a_disallow_is_one(body: bytes) -> None:
    # Each was read as "unknown key" (or the rules as outside any group): the site's
    # Disallow lost, every URL allowed.
    robots = RobotsTxt.parse(body)
    assert not robots.check("FooBot", "/x").allowed, robots.ignored


def test_an_allow_key_is_not_read_by_its_start() -> None:
    # "Allowed:" would widen access: it stays unknown, the Disallow holds
    robots = RobotsTxt.parse(b"User-agent: *\nDisallow: /\nAllowed: /x\n")
    assert not robots.check("FooBot", "/x").allowed


# A robots.txt saved as UTF-16 with its BOM, as store.usps.com and www.myvue.com serve
# theirs (protego's real files): read as UTF-8, every line was an unknown key and the
# site's Disallow rules were lost.
UTF16_FILE = "User-agent: *\r\nDisallow: /store/cart/\r\nSitemap: https://e.example/s.xml\r\n"


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_a_utf16_file_with_its_bom_is_read(codec: str) -> None:
    body = "\ufeff".encode(codec) + UTF16_FILE.encode(codec)
    robots = RobotsTxt.parse(body)
    assert robots.check("FooBot", "/store/cart/1") == Verdict(False, "Disallow: /store/cart/")
    assert robots.check("FooBot", "/store/") == Verdict(True, None)
    assert robots.sitemaps == ["https://e.example/s.xml"]
    assert robots.ignored_count == 0, robots.ignored


def test_a_cut_utf16_file_drops_its_cut_line() -> None:
    head = "\ufeffUser-agent: *\nDisallow: /early/\n".encode("utf-16-le")
    # the cut falls after "Disallow: /late", 15 characters into the last line
    pad = ("#" * ((MAX_ROBOTS_BYTES - len(head)) // 2 - 16) + "\n").encode("utf-16-le")
    body = head + pad + "Disallow: /late-and-long/\n".encode("utf-16-le")
    assert len(head + pad) < MAX_ROBOTS_BYTES < len(body)
    robots = RobotsTxt.parse(body)
    assert robots.truncated
    assert robots.check("x", "/early/") == Verdict(False, "Disallow: /early/")
    assert robots.check("x", "/late") == Verdict(True, None)  # not "Disallow: /lat"


def test_robots_check_reads_a_utf16_file(tmp_path: Path) -> None:
    from conftest import crawlkit

    robots = tmp_path / "robots.txt"
    robots.write_bytes("\ufeff".encode("utf-16-le") + UTF16_FILE.encode("utf-16-le"))
    out = crawlkit("robots", "check", "--robots", str(robots), "--agent", "FooBot", "/store/cart/")
    assert out.code == 0, out.stderr
    assert out.text.splitlines() == [
        '{"url":"/store/cart/","allowed":false,"rule":"Disallow: /store/cart/"}'
    ]
