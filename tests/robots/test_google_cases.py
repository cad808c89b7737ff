"""Google's reference parser's own cases (github.com/google/robotstxt, robots_test.cc and
reporting_robots_test.cc, Apache-2.0), retyped as rows: each row names the Google test
it mirrors (``Test[n]``: its n-th expectation, counted from 1) and states Google's answer.

A row whose ``differs`` is set is one where crawlkit answers otherwise on purpose; the
text says why, starting with what kind of difference it is:

* ``RFC 9309``: crawlkit does what the RFC asks and Google's parser does not;
* ``GoogleOnly, not adopted``: a Google extension a polite crawler should not follow;
* ``deliberate``: crawlkit's documented choice (crawlkit/robots/__init__.py).

No row is skipped: a row that differs asserts crawlkit's (opposite) answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson
import pytest

from crawlkit.robots import RobotsTxt, agent_token, normalize_pattern
from crawlkit.robots._normalize import path_of


@dataclass(frozen=True)
class Row:
    google: str  # the Google test and the expectation's number in it
    robots: str | bytes
    agent: str
    url: str
    google_allowed: bool  # Google's verdict
    rule: str | None  # the deciding line crawlkit reports (None: no rule matched)
    differs: str | None = None  # why crawlkit answers the opposite, or None


def rows(
    test: str, robots: str | bytes, agent: str, *expect: tuple[str, bool, str | None]
) -> list[Row]:
    """One row per (url, Google's verdict, crawlkit's deciding rule), numbered."""
    return [
        Row(f"{test}[{i}]", robots, agent, url, ok, rule)
        for i, (url, ok, rule) in enumerate(expect, 1)
    ]


def differ(row: Row, why: str) -> Row:
    """``row`` marked as one where crawlkit answers the opposite of Google, for ``why``."""
    return Row(row.google, row.robots, row.agent, row.url, row.google_allowed, row.rule, why)


FOOBOT_ALL = "user-agent: FooBot\ndisallow: /\n"
GROUPS = (
    "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\n"
    "disallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\n"
    "allow: /z/\ndisallow: /\n"
)
UPPER = "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n"
LOWER = "user-agent: FooBot\nallow: /x/\ndisallow: /\n"
CAMEL = "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n"
UA_UPPER = "User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n"
UA_LOWER = "User-Agent: foo bar\nAllow: /x/\nDisallow: /\n"
UA_CAMEL = "User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n"
KANJI = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n"
KANJI_ESC = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n"
BAZ_ESC = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n"
INDEX = "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n"
PAGE = "http://foo.bar/x/page.html"
F = "http://foo.bar"

# GoogleOnly_LineTooLong: Google cuts a line after 8 * 2083 bytes and keeps the cut
# pattern; crawlkit reads every line whole.
MAX_LINE = 2083 * 8


def _long(key: str, fill: str) -> str:
    """Google's long path: "/x/" filled to the line limit less the key, plus the EOL."""
    return "/x/".ljust(MAX_LINE - len("/x/") - len(key) + len("\n"), fill)


LONG_D = _long("disallow: ", "a")
LONG_A = _long("allow: ", "a")
LONG_B = _long("allow: ", "b")
LONG_DISALLOW = f"user-agent: FooBot\ndisallow: {LONG_D}/qux\n"
LONG_ALLOW = f"{FOOBOT_ALL}allow: {LONG_A}/qux\nallow: {LONG_B}/qux\n"

RFC_UNENCODED = (
    "RFC 9309: 2.2.2 has octets outside US-ASCII percent-encoded before comparing, in "
    "the URL as in the rule; Google leaves the URL's encoding to its caller"
)
RFC_UNRESERVED = (
    "RFC 9309: 2.2.2's table matches /foo/bar/%62%61%7A with /foo/bar/baz (RFC 3986 "
    "6.2.2.2: escaped unreserved characters are the characters); Google compares "
    "the escapes as written"
)
NOT_INDEX_HTML = (
    "GoogleOnly, not adopted: allowing /dir/index.html does not say the site allows "
    "/dir/ (it may serve a listing or other page there); reading more into an allow "
    "is less polite, so crawlkit allows only what a rule allows"
)
WHOLE_LINES = (
    "deliberate: crawlkit reads a long line whole (the file's first 512 KiB); a pattern "
    "cut at 16,664 bytes forbids or allows more than the site wrote"
)
AGENT_TOKEN = (
    "deliberate: crawlkit reduces the crawler's own name to its product token (a full "
    "User-Agent header may be passed), so 'Foo Bar' is 'foo' and obeys the Foo group; "
    "Google matches the invalid name 'Foo Bar' against no group"
)

ROWS: list[Row] = [
    *rows("GoogleOnly_SystemTest", "", "FooBot", ("", True, None)),
    Row("GoogleOnly_SystemTest[2]", FOOBOT_ALL, "", "", True, None),
    Row("GoogleOnly_SystemTest[3]", FOOBOT_ALL, "FooBot", "", False, "Disallow: /"),
    Row("GoogleOnly_SystemTest[4]", "", "", "", True, None),
    *rows("ID_LineSyntax_Line", FOOBOT_ALL, "FooBot", ("http://foo.bar/x/y", False, "Disallow: /")),
    Row("ID_LineSyntax_Line[2]", "foo: FooBot\nbar: /\n", "FooBot", F + "/x/y", True, None),
    Row(
        "ID_LineSyntax_Line[3]",
        "user-agent FooBot\ndisallow /\n",
        "FooBot",
        F + "/x/y",
        False,
        "Disallow: /",
    ),
    *rows(
        "ID_LineSyntax_Groups",
        GROUPS,
        "FooBot",
        (F + "/x/b", True, "Allow: /x/"),
        (F + "/z/d", True, "Allow: /z/"),
        (F + "/y/c", False, "Disallow: /"),
    ),
    Row("ID_LineSyntax_Groups[4]", GROUPS, "BarBot", F + "/y/c", True, "Allow: /y/"),
    Row("ID_LineSyntax_Groups[5]", GROUPS, "BarBot", F + "/w/a", True, "Allow: /w/"),
    Row("ID_LineSyntax_Groups[6]", GROUPS, "BarBot", F + "/z/d", False, "Disallow: /"),
    Row("ID_LineSyntax_Groups[7]", GROUPS, "BazBot", F + "/z/d", True, "Allow: /z/"),
    Row("ID_LineSyntax_Groups[8]", GROUPS, "FooBot", F + "/foo/bar/", False, "Disallow: /"),
    Row("ID_LineSyntax_Groups[9]", GROUPS, "BarBot", F + "/foo/bar/", False, "Disallow: /"),
    Row("ID_LineSyntax_Groups[10]", GROUPS, "BazBot", F + "/foo/bar/", False, "Disallow: /"),
]

_SITEMAP_GROUP = (
    "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n"
)
_UNKNOWN_GROUP = "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n"
ROWS += [
    Row(
        "ID_LineSyntax_Groups_OtherRules[1]",
        _SITEMAP_GROUP,
        "FooBot",
        F + "/",
        False,
        "Disallow: /",
    ),
    Row(
        "ID_LineSyntax_Groups_OtherRules[2]",
        _SITEMAP_GROUP,
        "BarBot",
        F + "/",
        False,
        "Disallow: /",
    ),
    Row(
        "ID_LineSyntax_Groups_OtherRules[3]",
        _UNKNOWN_GROUP,
        "FooBot",
        F + "/",
        False,
        "Disallow: /",
    ),
    Row(
        "ID_LineSyntax_Groups_OtherRules[4]",
        _UNKNOWN_GROUP,
        "BarBot",
        F + "/",
        False,
        "Disallow: /",
    ),
]
for _n, (_file, _url, _ok, _rule) in enumerate(
    [
        (UPPER, "/x/y", True, "Allow: /x/"),
        (LOWER, "/x/y", True, "Allow: /x/"),
        (CAMEL, "/x/y", True, "Allow: /x/"),
        (UPPER, "/a/b", False, "Disallow: /"),
        (LOWER, "/a/b", False, "Disallow: /"),
        (CAMEL, "/a/b", False, "Disallow: /"),
    ],
    1,
):
    ROWS.append(Row(f"ID_REPLineNamesCaseInsensitive[{_n}]", _file, "FooBot", F + _url, _ok, _rule))
for _n, (_file, _agent, _url, _ok, _rule) in enumerate(
    [
        (f, agent, url, ok, rule)
        for agent in ("Foo", "foo")
        for url, ok, rule in (("/x/y", True, "Allow: /x/"), ("/a/b", False, "Disallow: /"))
        for f in (UA_UPPER, UA_LOWER, UA_CAMEL)
    ],
    1,
):
    ROWS.append(Row(f"ID_UserAgentValueCaseInsensitive[{_n}]", _file, _agent, F + _url, _ok, _rule))

_FIRST_SPACE = "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n"
_GLOBAL = "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n"
_SPECIFIC = (
    "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\n"
    "user-agent: BazBot\ndisallow: /\n"
)
ROWS += [
    Row(
        "GoogleOnly_AcceptUserAgentUpToFirstSpace[2]",
        _FIRST_SPACE,
        "Foo",
        F + "/x/y",
        True,
        "Allow: /x/",
    ),
    differ(
        Row(
            "GoogleOnly_AcceptUserAgentUpToFirstSpace[3]",
            _FIRST_SPACE,
            "Foo Bar",
            F + "/x/y",
            False,
            "Allow: /x/",
        ),
        AGENT_TOKEN,
    ),
    Row("ID_GlobalGroups_Secondary[1]", "", "FooBot", F + "/x/y", True, None),
    Row("ID_GlobalGroups_Secondary[2]", _GLOBAL, "FooBot", F + "/x/y", False, "Disallow: /"),
    Row("ID_GlobalGroups_Secondary[3]", _GLOBAL, "BarBot", F + "/x/y", True, "Allow: /"),
    Row("ID_GlobalGroups_Secondary[4]", _SPECIFIC, "QuxBot", F + "/x/y", True, None),
    Row(
        "ID_AllowDisallow_Value_CaseSensitive[1]",
        "user-agent: FooBot\ndisallow: /x/\n",
        "FooBot",
        F + "/x/y",
        False,
        "Disallow: /x/",
    ),
    Row(
        "ID_AllowDisallow_Value_CaseSensitive[2]",
        "user-agent: FooBot\ndisallow: /X/\n",
        "FooBot",
        F + "/x/y",
        True,
        None,
    ),
]
_LM = "ID_LongestMatch"
_FB = "user-agent: FooBot\n"
ROWS += [
    Row(
        f"{_LM}[1]",
        _FB + "disallow: /x/page.html\nallow: /x/\n",
        "FooBot",
        PAGE,
        False,
        "Disallow: /x/page.html",
    ),
    Row(
        f"{_LM}[2]",
        _FB + "allow: /x/page.html\ndisallow: /x/\n",
        "FooBot",
        PAGE,
        True,
        "Allow: /x/page.html",
    ),
    Row(
        f"{_LM}[3]",
        _FB + "allow: /x/page.html\ndisallow: /x/\n",
        "FooBot",
        F + "/x/",
        False,
        "Disallow: /x/",
    ),
    Row(f"{_LM}[4]", _FB + "disallow: \nallow: \n", "FooBot", PAGE, True, None),
    Row(f"{_LM}[5]", _FB + "disallow: /\nallow: /\n", "FooBot", PAGE, True, "Allow: /"),
    Row(f"{_LM}[6]", _FB + "disallow: /x\nallow: /x/\n", "FooBot", F + "/x", False, "Disallow: /x"),
    Row(f"{_LM}[7]", _FB + "disallow: /x\nallow: /x/\n", "FooBot", F + "/x/", True, "Allow: /x/"),
    Row(
        f"{_LM}[8]",
        _FB + "disallow: /x/page.html\nallow: /x/page.html\n",
        "FooBot",
        PAGE,
        True,
        "Allow: /x/page.html",
    ),
    Row(
        f"{_LM}[9]",
        _FB + "allow: /page\ndisallow: /*.html\n",
        "FooBot",
        F + "/page.html",
        False,
        "Disallow: /*.html",
    ),
    Row(
        f"{_LM}[10]",
        _FB + "allow: /page\ndisallow: /*.html\n",
        "FooBot",
        F + "/page",
        True,
        "Allow: /page",
    ),
    Row(
        f"{_LM}[11]",
        _FB + "allow: /x/page.\ndisallow: /*.html\n",
        "FooBot",
        PAGE,
        True,
        "Allow: /x/page.",
    ),
    Row(
        f"{_LM}[12]",
        _FB + "allow: /x/page.\ndisallow: /*.html\n",
        "FooBot",
        F + "/x/y.html",
        False,
        "Disallow: /*.html",
    ),
    Row(
        f"{_LM}[13]",
        "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
        "FooBot",
        F + "/x/page",
        True,
        None,
    ),
    Row(
        f"{_LM}[14]",
        "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
        "FooBot",
        F + "/y/page",
        False,
        "Disallow: /y/",
    ),
]
_QUERY = "/foo/bar?qux=taz&baz=http://foo.bar?tar&par"
ROWS += [
    Row(
        "ID_Encoding[1]",
        f"User-agent: FooBot\nDisallow: /\nAllow: {_QUERY}\n",
        "FooBot",
        F + _QUERY,
        True,
        f"Allow: {_QUERY}",
    ),
    Row("ID_Encoding[2]", KANJI, "FooBot", F + "/foo/bar/%E3%83%84", True, "Allow: /foo/bar/ツ"),
    differ(
        Row("ID_Encoding[3]", KANJI, "FooBot", F + "/foo/bar/ツ", False, "Allow: /foo/bar/ツ"),
        RFC_UNENCODED,
    ),
    Row(
        "ID_Encoding[4]",
        KANJI_ESC,
        "FooBot",
        F + "/foo/bar/%E3%83%84",
        True,
        "Allow: /foo/bar/%E3%83%84",
    ),
    differ(
        Row(
            "ID_Encoding[5]",
            KANJI_ESC,
            "FooBot",
            F + "/foo/bar/ツ",
            False,
            "Allow: /foo/bar/%E3%83%84",
        ),
        RFC_UNENCODED,
    ),
    differ(
        Row(
            "ID_Encoding[6]",
            BAZ_ESC,
            "FooBot",
            F + "/foo/bar/baz",
            False,
            "Allow: /foo/bar/%62%61%7A",
        ),
        RFC_UNRESERVED,
    ),
    Row(
        "ID_Encoding[7]",
        BAZ_ESC,
        "FooBot",
        F + "/foo/bar/%62%61%7A",
        True,
        "Allow: /foo/bar/%62%61%7A",
    ),
]
_SC1 = "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n"
_SC2 = "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n"
_SC3 = "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n"
ROWS += [
    *rows(
        "ID_SpecialCharacters",
        _SC1,
        "FooBot",
        (F + "/foo/bar/quz", False, "Disallow: /foo/bar/quz"),
        (F + "/foo/quz", True, None),
        (F + "/foo//quz", True, None),
        (F + "/foo/bax/quz", True, None),
    ),
    Row("ID_SpecialCharacters[5]", _SC2, "FooBot", F + "/foo/bar", False, "Disallow: /foo/bar$"),
    Row("ID_SpecialCharacters[6]", _SC2, "FooBot", F + "/foo/bar/qux", True, "Allow: /foo/bar/qux"),
    Row("ID_SpecialCharacters[7]", _SC2, "FooBot", F + "/foo/bar/", True, None),
    Row("ID_SpecialCharacters[8]", _SC2, "FooBot", F + "/foo/bar/baz", True, None),
    Row("ID_SpecialCharacters[9]", _SC3, "FooBot", F + "/foo/bar", True, "Allow: /"),
    Row("ID_SpecialCharacters[10]", _SC3, "FooBot", F + "/foo/quz", False, "Disallow: /foo/quz"),
    differ(
        Row(
            "GoogleOnly_IndexHTMLisDirectory[1]",
            INDEX,
            "foobot",
            "http://foo.com/allowed-slash/",
            True,
            "Disallow: /",
        ),
        NOT_INDEX_HTML,
    ),
    Row(
        "GoogleOnly_IndexHTMLisDirectory[2]",
        INDEX,
        "foobot",
        "http://foo.com/allowed-slash/index.htm",
        False,
        "Disallow: /",
    ),
    Row(
        "GoogleOnly_IndexHTMLisDirectory[3]",
        INDEX,
        "foobot",
        "http://foo.com/allowed-slash/index.html",
        True,
        "Allow: /allowed-slash/index.html",
    ),
    Row(
        "GoogleOnly_IndexHTMLisDirectory[4]",
        INDEX,
        "foobot",
        "http://foo.com/anyother-url",
        False,
        "Disallow: /",
    ),
    Row("GoogleOnly_LineTooLong[1]", LONG_DISALLOW, "FooBot", F + "/fux", True, None),
    differ(
        Row("GoogleOnly_LineTooLong[2]", LONG_DISALLOW, "FooBot", F + LONG_D + "/fux", False, None),
        WHOLE_LINES,
    ),
    Row("GoogleOnly_LineTooLong[3]", LONG_ALLOW, "FooBot", F + "/", False, "Disallow: /"),
    Row(
        "GoogleOnly_LineTooLong[4]",
        LONG_ALLOW,
        "FooBot",
        F + LONG_A + "/qux",
        True,
        f"Allow: {LONG_A}/qux",
    ),
    differ(
        Row(
            "GoogleOnly_LineTooLong[5]",
            LONG_ALLOW,
            "FooBot",
            F + LONG_B + "/fux",
            True,
            "Disallow: /",
        ),
        WHOLE_LINES,
    ),
]

# GoogleOnly_DocumentationChecks: developers.google.com's examples, each under
# "disallow: /" with one allow rule; (allow pattern, [(path, Google's verdict)]).
DOC_EXAMPLES: list[tuple[str, list[tuple[str, bool]]]] = [
    (
        "/fish",
        [("/bar", False), ("/fish", True), ("/fish.html", True), ("/fish/salmon.html", True),
         ("/fishheads", True), ("/fishheads/yummy.html", True), ("/fish.html?id=anything", True),
         ("/Fish.asp", False), ("/catfish", False), ("/?id=fish", False)],
    ),
    (
        "/fish*",
        [("/bar", False), ("/fish", True), ("/fish.html", True), ("/fish/salmon.html", True),
         ("/fishheads", True), ("/fishheads/yummy.html", True), ("/fish.html?id=anything", True),
         ("/Fish.bar", False), ("/catfish", False), ("/?id=fish", False)],
    ),
    (
        "/fish/",
        [("/bar", False), ("/fish/", True), ("/fish/salmon", True), ("/fish/?salmon", True),
         ("/fish/salmon.html", True), ("/fish/?id=anything", True), ("/fish", False),
         ("/fish.html", False), ("/Fish/Salmon.html", False)],
    ),
    (
        "/*.php",
        [("/bar", False), ("/filename.php", True), ("/folder/filename.php", True),
         ("/folder/filename.php?parameters", True), ("//folder/any.php.file.html", True),
         ("/filename.php/", True), ("/index?f=filename.php/", True), ("/php/", False),
         ("/index?php", False), ("/windows.PHP", False)],
    ),
    (
        "/*.php$",
        [("/bar", False), ("/filename.php", True), ("/folder/filename.php", True),
         ("/filename.php?parameters", False), ("/filename.php/", False),
         ("/filename.php5", False), ("/php/", False), ("/filename?php", False),
         ("/aaaphpaaa", False), ("//windows.PHP", False)],
    ),
    (
        "/fish*.php",
        [("/bar", False), ("/fish.php", True), ("/fishheads/catfish.php?parameters", True),
         ("/Fish.PHP", False)],
    ),
]  # fmt: skip
_DOC = "GoogleOnly_DocumentationChecks"
_n = 0
for _pattern, _paths in DOC_EXAMPLES:
    for _path, _ok in _paths:
        _n += 1
        _rule = f"Allow: {_pattern}" if _ok else "Disallow: /"
        ROWS.append(
            Row(
                f"{_DOC}[{_n}]", f"{FOOBOT_ALL}allow: {_pattern}\n", "FooBot", F + _path, _ok, _rule
            )
        )
_EX = "http://example.com"
ROWS += [
    Row(
        f"{_DOC}[{_n + 1}]",
        _FB + "allow: /p\ndisallow: /\n",
        "FooBot",
        _EX + "/page",
        True,
        "Allow: /p",
    ),
    Row(
        f"{_DOC}[{_n + 2}]",
        _FB + "allow: /folder\ndisallow: /folder\n",
        "FooBot",
        _EX + "/folder/page",
        True,
        "Allow: /folder",
    ),
    Row(
        f"{_DOC}[{_n + 3}]",
        _FB + "allow: /page\ndisallow: /*.htm\n",
        "FooBot",
        _EX + "/page.htm",
        False,
        "Disallow: /*.htm",
    ),
    Row(
        f"{_DOC}[{_n + 4}]",
        _FB + "allow: /$\ndisallow: /\n",
        "FooBot",
        _EX + "/",
        True,
        "Allow: /$",
    ),
    Row(
        f"{_DOC}[{_n + 5}]",
        _FB + "allow: /$\ndisallow: /\n",
        "FooBot",
        _EX + "/page.html",
        False,
        "Disallow: /",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.google for r in ROWS])
def test_google_case(row: Row) -> None:
    """crawlkit gives Google's verdict, or the opposite where the row says why, and
    names the deciding line."""
    body = row.robots if isinstance(row.robots, bytes) else row.robots.encode()
    verdict = RobotsTxt.parse(body).check(row.agent, row.url)
    expected = row.google_allowed if row.differs is None else not row.google_allowed
    assert (verdict.allowed, verdict.rule) == (expected, row.rule)


def test_row_names_are_unique_and_differences_say_their_kind() -> None:
    assert len({r.google for r in ROWS}) == len(ROWS)
    kinds = ("RFC 9309:", "GoogleOnly, not adopted:", "deliberate:")
    assert all(r.differs.startswith(kinds) for r in ROWS if r.differs is not None)


def test_robots_check_reports_googles_verdicts_and_the_deciding_rules(cli, tmp_path) -> None:
    """``crawlkit robots check`` answers a file's rows as the library does: the same
    verdict and deciding line (Google's matcher reports the line too, as
    ``matching_line``)."""
    robots = tmp_path / "robots.txt"
    robots.write_text(f"{FOOBOT_ALL}allow: /*.php$\nallow: /fish\n", encoding="utf-8")
    urls = ["/bar", "/filename.php", "/filename.php?x", "/fish.html", "/folder/a.php"]
    res = cli("robots", "check", "--robots", str(robots), "--agent", "FooBot", *urls)
    assert res.code == 0, res.stderr
    assert [orjson.loads(line) for line in res.lines] == [
        {"url": "/bar", "allowed": False, "rule": "Disallow: /"},
        {"url": "/filename.php", "allowed": True, "rule": "Allow: /*.php$"},
        {"url": "/filename.php?x", "allowed": False, "rule": "Disallow: /"},
        {"url": "/fish.html", "allowed": True, "rule": "Allow: /fish"},
        {"url": "/folder/a.php", "allowed": True, "rule": "Allow: /*.php$"},
    ]


# ID_VerifyValidUserAgentsToObey: (crawler name, Google: valid as written, crawlkit's
# token). crawlkit agrees on which names are valid as written and reduces the others to
# their leading token (see AGENT_TOKEN); "" and "ツ" have none and obey the "*" group.
AGENTS = [
    ("Foobot", True, "foobot"),
    ("Foobot-Bar", True, "foobot-bar"),
    ("Foo_Bar", True, "foo_bar"),
    ("", False, ""),
    ("ツ", False, ""),
    ("Foobot*", False, "foobot"),
    (" Foobot ", False, "foobot"),
    ("Foobot/2.1", False, "foobot"),
    ("Foobot Bar", False, "foobot"),
]


@pytest.mark.parametrize(
    ("agent", "google_valid", "token"),
    AGENTS,
    ids=[f"ID_VerifyValidUserAgentsToObey[{i}]" for i in range(1, len(AGENTS) + 1)],
)
def test_google_valid_agents(agent: str, google_valid: bool, token: str) -> None:
    assert agent_token(agent) == token
    assert (bool(token) and token == agent.lower()) == google_valid


# TestGetPathParamsQuery: (URL, Google's path, crawlkit's path if it differs, why).
NOT_A_URL = (
    "deliberate: neither an absolute URL nor a path; RobotsTxt.check() takes those "
    "only and reads it as a path, Google as host[/path]; `robots check` answers it "
    "with an error (test_robots_check_answers_a_url_without_scheme_with_an_error)"
)
PATHS: list[tuple[str, str, str | None, str | None]] = [
    ("", "/", None, None),
    ("http://www.example.com", "/", None, None),
    ("http://www.example.com/", "/", None, None),
    ("http://www.example.com/a", "/a", None, None),
    ("http://www.example.com/a/", "/a/", None, None),
    ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/", None, None),
    ("http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f", None, None),
    ("example.com", "/", "/example.com", NOT_A_URL),
    ("example.com/", "/", "/example.com/", NOT_A_URL),
    ("example.com/a", "/a", "/example.com/a", NOT_A_URL),
    ("example.com/a/", "/a/", "/example.com/a/", NOT_A_URL),
    ("example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f", "/example.com/a/b?c=d&e=f", NOT_A_URL),
    ("a", "/", "/a", NOT_A_URL),
    ("a/", "/", "/a/", NOT_A_URL),
    ("/a", "/a", None, None),
    ("a/b", "/b", "/a/b", NOT_A_URL),
    ("example.com?a", "/?a", "/example.com?a", NOT_A_URL),
    ("example.com/a;b#c", "/a;b", "/example.com/a;b", NOT_A_URL),
    (
        "//a/b/c",
        "/b/c",
        "//a/b/c",
        "deliberate: a string starting with / is the request path a server sees; "
        "//a/b/c is a valid one (crawlkit/robots/_normalize.py path_of)",
    ),
]


@pytest.mark.parametrize(
    ("url", "google_path", "crawlkit_path", "why"),
    PATHS,
    ids=[f"TestGetPathParamsQuery[{i}]" for i in range(1, len(PATHS) + 1)],
)
def test_google_path_of(
    url: str, google_path: str, crawlkit_path: str | None, why: str | None
) -> None:
    assert (crawlkit_path is None) == (why is None)
    assert path_of(url) == (google_path if crawlkit_path is None else crawlkit_path)


# TestMaybeEscapePattern: (pattern, Google's escaped form); crawlkit agrees on all.
ESCAPES = [
    ("http://www.example.com", "http://www.example.com"),
    ("/a/b/c", "/a/b/c"),
    ("á", "%C3%A1"),
    ("%aa", "%AA"),
]


@pytest.mark.parametrize(
    ("pattern", "escaped"),
    ESCAPES,
    ids=[f"TestMaybeEscapePattern[{i}]" for i in range(1, len(ESCAPES) + 1)],
)
def test_google_pattern_escapes(pattern: str, escaped: str) -> None:
    assert normalize_pattern(pattern) == escaped


@dataclass(frozen=True)
class Lines:
    """What crawlkit's parser made of a file, by line number, to set against Google's
    parse reports (its line numbers and its counts of directives and unknown lines)."""

    groups: list[int]  # the line of each group's first user-agent line
    rules: list[int]
    outside: list[int]  # rules before any user-agent line (Google: valid directives)
    unknown: list[int]  # lines that are no directive (Google: unknown or unused keys)
    directives: int  # user-agent, allow, disallow and sitemap lines (Google's count)


def lines_of(body: bytes) -> Lines:
    robots = RobotsTxt.parse(body)
    d = robots.to_dict()
    outside = [i["line"] for i in d["ignored"] if i["why"].startswith("outside any group")]
    unknown = [
        i["line"] for i in d["ignored"] if i["why"] in ("unknown key", "not a key: value line")
    ]
    agents = sum(len(g["agents"]) for g in d["groups"])
    rules = [r["line"] for g in d["groups"] for r in g["rules"]]
    return Lines(
        [g["line"] for g in d["groups"]],
        sorted(rules),
        outside,
        unknown,
        agents + len(rules) + len(outside) + len(d["sitemaps"]),
    )


# ID_LinesNumbersAreCountedCorrectly: the same file with each kind of line end; Google
# counts 4 directives, the last on line 6.
LINE_ENDS = [
    b"User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n",
    b"User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n",
    b"User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r",
    b"User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /",
    b"User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
]


@pytest.mark.parametrize(
    "body", LINE_ENDS, ids=[f"ID_LinesNumbersAreCountedCorrectly[{i}]" for i in range(1, 6)]
)
def test_google_line_numbers(body: bytes) -> None:
    assert lines_of(body) == Lines([1, 3], [2, 6], [], [], 4)


# ID_UTF8ByteOrderMarkIsSkipped: (file, Google's directives, Google's unknown lines).
BOMS: list[tuple[bytes, int, list[int]]] = [
    (b"\xef\xbb\xbfUser-Agent: foo\nAllow: /AnyValue\n", 2, []),
    (b"\xef\xbbUser-Agent: foo\nAllow: /AnyValue\n", 2, []),
    (b"\xefUser-Agent: foo\nAllow: /AnyValue\n", 2, []),
    (b"\xef\x11\xbfUser-Agent: foo\nAllow: /AnyValue\n", 1, [1]),
    (b"User-Agent: foo\n\xef\xbb\xbfAllow: /AnyValue\n", 1, [2]),
]


@pytest.mark.parametrize(
    ("body", "directives", "unknown"),
    BOMS,
    ids=[f"ID_UTF8ByteOrderMarkIsSkipped[{i}]" for i in range(1, len(BOMS) + 1)],
)
def test_google_byte_order_marks(body: bytes, directives: int, unknown: list[int]) -> None:
    got = lines_of(body)
    assert (got.directives, got.unknown) == (directives, unknown)


@pytest.mark.parametrize(
    "first",
    [False, True],
    ids=["ID_NonStandardLineExample_Sitemap[1]", "ID_NonStandardLineExample_Sitemap[2]"],
)
def test_google_sitemap_anywhere(first: bool) -> None:
    groups = "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\n"
    sitemap = "Sitemap: http://foo.bar/sitemap.xml\n"
    body = (sitemap + groups if first else groups + sitemap).encode()
    assert RobotsTxt.parse(body).sitemaps == ["http://foo.bar/sitemap.xml"]


REPORTING = (
    b"User-Agent: foo\n"  # 1
    b"Allow: /some/path\n"  # 2
    b"User-Agent bar # no\n"  # 3: no colon, accepted
    b"absolutely random line\n"  # 4
    b"#so comment, much wow\n"  # 5
    b"\n"  # 6
    b"unicorns: /extinct\n"  # 7
    b"noarchive: /some\n"  # 8: Google: known but unused
    b"Disallow: /\n"  # 9
    b"Error #and comment\n"  # 10
    b"useragent: baz\n"  # 11: typo, accepted
    b"disallaw: /some\n"  # 12: typo, accepted
    b"site-map: https://e/s.xml #comment\n"  # 13: typo, accepted
    b"sitemap: https://e/t.xml\n"  # 14
    b"Noarchive: /someCapital\n"  # 15: Google: known but unused
)


def test_google_reporting_line_numbers() -> None:
    """reporting_robots_test.cc LinesNumbersAreCountedCorrectly: 8 directives, on the
    same lines; Google's unknown (4, 7, 10) and unused (8, 15) lines are crawlkit's
    ignored ones; comments and blank lines are neither in both."""
    assert lines_of(REPORTING) == Lines([1, 3, 11], [2, 9, 12], [], [4, 7, 8, 10, 15], 8)
    assert RobotsTxt.parse(REPORTING).sitemaps == ["https://e/s.xml", "https://e/t.xml"]
    # the DOS and Mac files: the Disallow on line 6 (Google's count of 7 lines includes
    # the empty one after the last line end, which crawlkit does not report)
    assert lines_of(LINE_ENDS[1]).rules == lines_of(LINE_ENDS[2]).rules == [2, 6]


def test_google_reporting_long_line() -> None:
    """reporting_robots_test.cc LinesTooLongReportedCorrectly: a disallow of over
    16,672 bytes on line 2 is a directive and the allow after it is on line 3 (Google
    flags line 2 as too long and keeps it cut; crawlkit keeps it whole: WHOLE_LINES)."""
    longline = "/x/" + "a" * (2084 * 8 - 3)
    body = f"user-agent: foo\ndisallow: {longline}\nallow: /\n".encode()
    assert lines_of(body) == Lines([1], [2, 3], [], [], 3)
    robots = RobotsTxt.parse(body)
    assert robots.check("foo", longline).rule == f"Disallow: {longline}"


def test_robots_check_answers_a_url_without_scheme_with_an_error(cli, tmp_path) -> None:
    """A URL without its scheme (TestGetPathParamsQuery's ``example.com/a``, read by
    Google as host and path) has no path of its own: matched as the path
    ``/example.com/private`` it was allowed where ``/private`` is forbidden. It is
    answered with an error, kept, and reported; the lines around it are answered."""
    robots = tmp_path / "robots.txt"
    robots.write_bytes(b"User-agent: *\nDisallow: /private\n")
    res = cli(
        "robots",
        "check",
        "--robots",
        str(robots),
        "--agent",
        "FooBot",
        input=b'example.com/private\n{"url": "a/private", "depth": 1}\nhttp://e.com/private\n',
    )
    assert res.code == 0, res.stderr
    error = "not an absolute URL or a path starting with /"
    assert [orjson.loads(line) for line in res.lines] == [
        {"url": "example.com/private", "allowed": False, "rule": None, "error": error},
        {"url": "a/private", "depth": 1, "allowed": False, "rule": None, "error": error},
        {"url": "http://e.com/private", "allowed": False, "rule": "Disallow: /private"},
    ]
    assert f"<stdin>:1: {error}: 'example.com/private'" in res.stderr
    assert f"<stdin>:2: {error}: 'a/private'" in res.stderr
