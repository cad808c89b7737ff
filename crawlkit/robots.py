"""robots.txt by RFC 9309: the parser, the matcher, and the fetch policy.

Three parts, each usable on its own:

:class:`RobotsTxt`
    Parses the bytes of a robots.txt (never raises) and answers ``check(agent, url)``
    with a :class:`Verdict` that names the deciding rule. Precompiled: after the first
    check for an agent, a check costs about a microsecond.
:class:`RobotsEntry`
    What a cache keeps per host (``scheme://host:port``): the status, the times, the
    last good body and the effective rules. JSON-safe through ``to_dict``/``from_dict``.
:class:`RobotsPolicy`
    Turns the outcome of fetching robots.txt (a status and a body, or a network error)
    into a :class:`RobotsEntry` by RFC 9309 section 2.3 and DESIGN.md invariant 3.

What the parser does, rule by rule (RFC 9309 section numbers in brackets):

* Input is UTF-8, with or without a byte-order mark; invalid bytes are kept as their
  percent-escapes, so they still match the same bytes in a URL [2.3]. Lines end with
  LF, CRLF or CR [2.2]. ``#`` starts a comment [2.2]. The first 512 KiB are parsed
  (the RFC asks for at least 500 KiB [2.5]); a line cut by that limit is dropped
  whole, because half a path could allow or forbid more than the full one.
* A group is one or more ``user-agent`` lines followed by rules; a ``user-agent``
  line after a rule starts a new group [2.1]. Blank lines, unknown lines and
  ``sitemap`` lines do not end a group (nor does ``crawl-delay`` end a run of
  ``user-agent`` lines). Rules before any ``user-agent`` line belong to no group
  and are ignored.
* The product token of a ``user-agent`` line is its leading run of letters, ``-``
  and ``_`` (``FooBot/1.2`` is ``foobot``) [2.2.1]; ``*`` alone is the catch-all.
  The crawler's own name is reduced the same way, so a full User-Agent header
  (``FooBot/1.2 (+http://x)``) may be passed. Tokens compare case-insensitively.
  All groups naming the token are merged [2.2.1]; else the ``*`` groups (merged);
  else there are no rules and everything is allowed.
* ``allow`` and ``disallow`` take a path pattern starting with ``/`` or ``*``; ``*``
  matches any run of characters and a final ``$`` anchors the end [2.2.3]. The
  matching rule with the longest pattern (in octets, after normalisation, counting
  ``*`` and ``$``) wins; on a tie ``allow`` wins [2.2.2]. An empty ``disallow`` (or
  ``allow``) is no rule, so it allows everything. ``/robots.txt`` is always allowed
  [2.2.2]. Paths are compared with the query and without the fragment.
* Percent-encoding is normalised on both sides before comparing [2.2.2]: escapes of
  unreserved characters are decoded, other escapes are uppercased, and every octet
  outside printable ASCII (or not allowed in a URI) is escaped as UTF-8. A literal
  ``*`` or ``$`` in a URL is compared as ``%2A`` / ``%24``, so a pattern matches
  them only when written escaped [2.2.3]. A ``$`` inside a pattern (not at its end)
  is literal. In the query, escaped ``: / ? @`` are decoded, so
  ``?baz=https://foo.bar`` and ``?baz=https%3A%2F%2Ffoo.bar`` match alike (the
  RFC's own table in 2.2.2); in the path ``%2F`` stays distinct from ``/``.
* ``crawl-delay`` (not in the RFC, widely used) belongs to its group; a value that is
  not a finite non-negative number is ignored; merged groups take the largest value.
  ``sitemap`` lines are global, whatever group they appear in [2.2.4].

Real-world quirks, decided here (as Google's reference parser does):

* A line without a colon is accepted when it is exactly a key and a value separated
  by white space (``Disallow /x``).
* Common misspellings of keys are accepted: ``useragent``, ``user agent``,
  ``dissallow``, ``dissalow``, ``disalow``, ``diasllow``, ``disallaw``, ``site-map``,
  ``crawldelay``.
* A pattern that starts with neither ``/`` nor ``*`` (``Disallow: private``) is not
  a valid rule [2.2 grammar] and is ignored, like Google's parser, which never
  matches it; ``robots parse`` lists it among the ignored lines.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from crawlkit.errors import UsageError

__all__ = [
    "MAX_ROBOTS_BYTES",
    "Group",
    "RobotsEntry",
    "RobotsPolicy",
    "RobotsTxt",
    "Rule",
    "Verdict",
    "agent_token",
    "check_lines",
    "normalize_path",
    "normalize_pattern",
    "rules_for_status",
]

#: How much of a robots.txt is parsed (RFC 9309 section 2.5 asks for at least 500 KiB).
MAX_ROBOTS_BYTES = 512 * 1024
#: The longest a reachable file's rules may be trusted (RFC 9309 section 2.4).
MAX_CACHE_AGE = 24 * 3600.0

_DAY = 24 * 3600.0

# --------------------------------------------------------------------------------------
# Verdicts, rules and groups


@dataclass(frozen=True)
class Verdict:
    """The answer to "may this agent fetch this URL".

    ``rule`` is the deciding line as ``"Disallow: /private/"`` or ``"Allow: /a$"``
    (the pattern as written in the file), or None when no rule matched, or when a
    policy decided (unreachable file, ``/robots.txt`` itself).
    """

    allowed: bool
    rule: str | None


_ALLOWED = Verdict(True, None)
_DENIED = Verdict(False, None)


@dataclass(frozen=True)
class Rule:
    """One ``allow``/``disallow`` line: the pattern as written and as compared."""

    allow: bool
    pattern: str  # as written, trimmed
    normalized: str  # percent-encoding normalised; what is matched and measured
    line: int

    @property
    def text(self) -> str:
        return f"{'Allow' if self.allow else 'Disallow'}: {self.pattern}"

    @property
    def priority(self) -> tuple[int, bool]:
        """Longest pattern in octets wins; ``allow`` wins a tie (RFC 9309 2.2.2)."""
        return (len(self.normalized), self.allow)


@dataclass
class Group:
    """One group of the file: the tokens of its ``user-agent`` lines and its members."""

    agents: list[str]  # lowercased product tokens; "*" for the catch-all, "" if unusable
    line: int
    rules: list[Rule] = field(default_factory=list)
    crawl_delay: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "agents": list(self.agents),
            "line": self.line,
            "crawl_delay": self.crawl_delay,
            "rules": [
                {
                    "allow": r.allow,
                    "pattern": r.pattern,
                    "normalized": r.normalized,
                    "line": r.line,
                    "rule": r.text,
                }
                for r in self.rules
            ],
        }


# --------------------------------------------------------------------------------------
# Percent-encoding normalisation (RFC 9309 2.2.2, RFC 3986 2.1-2.4)

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters compared literally: unreserved plus reserved, except "*" and "$" (special in
# patterns, so compared escaped on the URL side), "%" (escapes) and "#" (fragment).
_LITERAL = r"A-Za-z0-9\-._~:/?\[\]@!&'()+,;="
_PLAIN_URL = re.compile(f"[{_LITERAL}]*")
_PLAIN_PATTERN = re.compile(f"[{_LITERAL}*]*")
_SPECIAL_URL = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_LITERAL}]")
_SPECIAL_PATTERN = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_LITERAL}*]")


def _escape_char(ch: str) -> str:
    try:
        data = ch.encode("utf-8", "surrogateescape")  # undecodable input bytes come back
    except UnicodeEncodeError:
        data = ch.encode("utf-8", "surrogatepass")
    return "".join(f"%{b:02X}" for b in data)


def _special(match: re.Match[str]) -> str:
    text = match.group(0)
    if len(text) == 3:  # a well-formed escape
        ch = chr(int(text[1:], 16))
        return ch if ch in _UNRESERVED else text.upper()
    return _escape_char(text)


_QUERY_ESCAPES = re.compile("%(?:3A|2F|3F|40)")
_QUERY_CHARS = {"%3A": ":", "%2F": "/", "%3F": "?", "%40": "@"}


def _query_repl(match: re.Match[str]) -> str:
    return _QUERY_CHARS[match.group(0)]


def _decode_query_delims(text: str) -> str:
    """In the query only, ``%3A %2F %3F %40`` are read as ``: / ? @``.

    RFC 3986 3.4 lets these stand unescaped in a query, and RFC 9309 2.2.2 (its
    table) matches ``/foo/bar?baz=https://foo.bar`` with its escaped spelling. In the
    path, ``%2F`` stays escaped: there it is not a separator.
    """
    q = text.find("?")
    if q < 0 or "%" not in text[q:]:
        return text
    return text[:q] + _QUERY_ESCAPES.sub(_query_repl, text[q:])


def normalize_path(path: str) -> str:
    """A URL's path and query in the form that is compared with patterns.

    Escapes of unreserved characters decoded, other escapes uppercased, everything
    else outside the literal URI characters escaped as UTF-8 (``*`` → ``%2A``,
    ``$`` → ``%24``, a stray ``%`` → ``%25``); in the query, escaped ``: / ? @``
    decoded. Idempotent.
    """
    if _PLAIN_URL.fullmatch(path):
        return path
    return _decode_query_delims(_SPECIAL_URL.sub(_special, path))


def normalize_pattern(pattern: str) -> str:
    """A rule's pattern normalised like :func:`normalize_path`, keeping ``*`` and a
    final ``$`` as the wildcard and the end anchor (a ``$`` elsewhere is literal)."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    if not _PLAIN_PATTERN.fullmatch(body):
        body = _decode_query_delims(_SPECIAL_PATTERN.sub(_special, body))
    return body + "$" if anchored else body


_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#]*")


def _path_of(url: str) -> str:
    """The path and query of an absolute URL, or of a path[?query]; "/" if empty.

    Only ``scheme://authority`` is stripped: a string starting with ``/`` is a path,
    even ``//a/b`` (a valid request path, as a server would see it).
    """
    if url.startswith("https://"):
        slash = url.find("/", 8)
        if slash < 0 or "?" in url[8:slash] or "#" in url[8:slash]:
            url = _strip_authority(url)
        else:
            url = url[slash:]
    elif url.startswith("http://"):
        slash = url.find("/", 7)
        if slash < 0 or "?" in url[7:slash] or "#" in url[7:slash]:
            url = _strip_authority(url)
        else:
            url = url[slash:]
    elif not url.startswith("/"):
        url = _strip_authority(url)
    if "#" in url:
        url = url[: url.index("#")]
    if not url.startswith("/"):
        url = "/" + url
    return url


def _strip_authority(url: str) -> str:
    m = _AUTHORITY.match(url)
    return url if m is None else url[m.end() :]


# --------------------------------------------------------------------------------------
# Product tokens

_TOKEN = re.compile(r"[A-Za-z_\-]+")


def agent_token(agent: str) -> str:
    """The product token of a user-agent value or header, lowercased.

    ``"FooBot/1.2 (+http://x)"`` → ``"foobot"``; ``"*"`` (alone or followed by white
    space) → ``"*"``; a value without a leading letter, ``-`` or ``_`` → ``""``.
    """
    agent = agent.strip()
    if agent.startswith("*") and (len(agent) == 1 or agent[1].isspace()):
        return "*"
    m = _TOKEN.match(agent)
    return m.group(0).lower() if m else ""


# --------------------------------------------------------------------------------------
# The matcher of one (merged) group


def _trie_regex(keys: Iterable[str]) -> str:
    """A regex whose greedy match on a path is the longest key that prefixes it.

    Built as a radix tree of nested groups; a key's end makes the rest of its branch
    optional, so backtracking falls back to the longest key that matched.
    """
    root: dict[str, Any] = {}
    for key in keys:
        node = root
        for ch in key:
            node = node.setdefault(ch, {})
        node[""] = True

    def emit(node: dict[str, Any]) -> str:
        out: list[str] = []
        while "" not in node and len(node) == 1:
            (ch, child), *_ = node.items()
            out.append(re.escape(ch))
            node = child
        kids = sorted(c for c in node if c != "")
        if kids:
            alts = [re.escape(c) + emit(node[c]) for c in kids]
            body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
            out.append(f"(?:{body})?" if "" in node else body)
        return "".join(out)

    return emit(root)


def _find_regex(piece: str) -> str:
    """A regex that skips to the end of the leftmost occurrence of ``piece``.

    Same as the atomic lazy ``(?>.*?piece)``, but runs of characters that cannot start
    ``piece`` are skipped by a possessive character class, about four times faster.
    """
    first, rest = re.escape(piece[0]), re.escape(piece[1:])
    if not rest:
        return f"[^{first}]*+{first}"
    return f"(?>[^{first}]*+(?:{first}(?!{rest})[^{first}]*+)*+){first}{rest}"


def _wildcard_regex(pattern: str) -> str:
    """A regex for one normalised pattern with ``*`` and/or a final ``$``.

    Every ``*`` but a last one before ``$`` skips to the leftmost occurrence of the next
    literal piece and never backtracks: taking the leftmost occurrence of each piece
    is enough to decide a match, and no backtracking keeps a hostile pattern
    (``/*a*a*a*a*b``) linear.
    """
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    parts = re.sub(r"\*+", "*", pattern).split("*")
    out = [re.escape(parts[0])]
    if len(parts) == 1:
        return out[0] + (r"\Z" if anchored else "")
    for piece in parts[1:-1]:
        out.append(_find_regex(piece))
    last = parts[-1]
    if anchored:
        out.append(f".*{re.escape(last)}\\Z")
    elif last:
        out.append(_find_regex(last))
    return "".join(out)


_TRIE_MAX_KEY = 1024  # longer literal patterns go to the wildcard list (bounded nesting)


class _Matcher:
    """Finds the deciding rule of one merged group for a path, quickly.

    Rules fall in three kinds, each searched in one step and compared by priority:
    literal prefixes (one regex over a radix tree: the longest prefix wins among
    them, and for these priority is length), literal patterns ending in ``$`` (one
    dict lookup of the whole path), and patterns with ``*`` (one alternation ordered
    by priority, so its first match is its best).
    """

    __slots__ = ("_exact", "_prefix", "_prefix_rx", "_wild", "_wild_rules")

    def __init__(self, rules: Sequence[Rule]):
        prefix: dict[str, Rule] = {}
        exact: dict[str, Rule] = {}
        wild: list[Rule] = []
        for rule in rules:
            pat = rule.normalized
            if not pat:
                continue  # an empty pattern is no rule (RFC 9309 2.2.2)
            if "*" in pat or len(pat) > _TRIE_MAX_KEY:
                wild.append(rule)
            elif pat.endswith("$"):
                _keep_best(exact, pat[:-1], rule)
            else:
                _keep_best(prefix, pat, rule)
        self._prefix = prefix
        self._exact = exact
        self._prefix_rx: re.Pattern[str] | None = None
        if prefix:
            try:
                self._prefix_rx = re.compile(_trie_regex(prefix), re.DOTALL)
            except (RecursionError, re.error, OverflowError, MemoryError):
                # Pathologically nested keys; fall back to the wildcard alternation.
                wild.extend(prefix.values())
                self._prefix = {}
        wild.sort(key=lambda r: r.priority, reverse=True)
        self._wild_rules = wild
        self._wild: list[re.Pattern[str]] = []
        for start in range(0, len(wild), 500):  # chunks keep each regex small
            chunk = wild[start : start + 500]
            alts = "|".join(f"({_wildcard_regex(r.normalized)})" for r in chunk)
            self._wild.append(re.compile(alts, re.DOTALL))

    def best(self, path: str) -> Rule | None:
        """The deciding rule for a normalised path, or None when no rule matches."""
        best: Rule | None = None
        if self._prefix_rx is not None:
            m = self._prefix_rx.match(path)
            if m is not None:
                best = self._prefix[m.group(0)]
        if self._exact:
            rule = self._exact.get(path)
            if rule is not None and (best is None or rule.priority > best.priority):
                best = rule
        offset = 0
        for rx in self._wild:
            m = rx.match(path)
            if m is not None:
                rule = self._wild_rules[offset + m.lastindex - 1]  # type: ignore[operator]
                if best is None or rule.priority > best.priority:
                    best = rule
                break  # chunks are in priority order: the first match is the best
            offset += 500
        return best


def _keep_best(table: dict[str, Rule], key: str, rule: Rule) -> None:
    old = table.get(key)
    if old is None or rule.priority > old.priority:
        table[key] = rule


class _GroupView:
    """A merged group, compiled: verdicts per path with precomputed Verdict objects."""

    __slots__ = ("_verdicts", "crawl_delay", "matcher")

    def __init__(self, rules: Sequence[Rule], crawl_delay: float | None):
        self.matcher = _Matcher(rules)
        self.crawl_delay = crawl_delay
        self._verdicts: dict[int, Verdict] = {}

    def check(self, url: str) -> Verdict:
        path = normalize_path(_path_of(url))
        if path == "/robots.txt" or path.startswith("/robots.txt?"):
            return _ALLOWED  # RFC 9309 2.2.2: the file itself is always allowed
        rule = self.matcher.best(path)
        if rule is None:
            return _ALLOWED
        verdict = self._verdicts.get(id(rule))
        if verdict is None:
            verdict = self._verdicts[id(rule)] = Verdict(rule.allow, rule.text)
        return verdict


# --------------------------------------------------------------------------------------
# The parser

_KEYS = {
    "user-agent": "ua",
    "useragent": "ua",
    "user agent": "ua",
    "allow": "allow",
    "disallow": "disallow",
    "dissallow": "disallow",
    "dissalow": "disallow",
    "disalow": "disallow",
    "diasllow": "disallow",
    "disallaw": "disallow",
    "crawl-delay": "delay",
    "crawldelay": "delay",
    "sitemap": "sitemap",
    "site-map": "sitemap",
}
_LINE_END = re.compile(r"\r\n|\r|\n")
_UNDECODABLE = re.compile("[\udc80-\udcff]")


def _printable(text: str) -> str:
    """``text`` with bytes that were not UTF-8 shown as %XX, so it is valid JSON."""
    if text.isascii():
        return text
    return _UNDECODABLE.sub(lambda m: f"%{ord(m.group(0)) - 0xDC00:02X}", text)


_MAX_IGNORED = 100  # ignored lines kept for `robots parse`; all are counted


class RobotsTxt:
    """The parsed rules of one robots.txt.

    ``sitemaps`` lists the Sitemap URLs in file order (global, RFC 9309 2.2.4).
    ``groups`` lists the groups in file order, unmerged (for display); matching
    merges them per token. Instances are immutable after parsing and safe to share;
    compiled matchers are cached per agent string.
    """

    def __init__(self) -> None:
        self.groups: list[Group] = []
        self.sitemaps: list[str] = []
        self.ignored: list[tuple[int, str, str]] = []  # (line, text, why), first 100
        self.ignored_count = 0
        self.truncated = False
        self.size = 0
        self._mode: str = "rules"  # or "allow_all" / "disallow_all"
        self._by_token: dict[str, list[Group]] = {}
        self._views: dict[str, _GroupView | None] = {}
        self._token_views: dict[str, _GroupView | None] = {}

    # ---- construction

    @classmethod
    def allow_all(cls) -> RobotsTxt:
        """No restrictions (robots.txt missing: 4xx, or too many redirects)."""
        robots = cls()
        robots._mode = "allow_all"
        return robots

    @classmethod
    def disallow_all(cls) -> RobotsTxt:
        """Everything forbidden except /robots.txt (server error, 429, network error)."""
        robots = cls()
        robots._mode = "disallow_all"
        return robots

    @classmethod
    def parse(cls, body: bytes) -> RobotsTxt:
        """Parse the first 512 KiB of a robots.txt. Never raises."""
        robots = cls()
        robots.size = len(body)
        if len(body) > MAX_ROBOTS_BYTES:
            robots.truncated = True
            body = body[:MAX_ROBOTS_BYTES]
            cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
            body = body[: cut + 1] if cut >= 0 else b""
        text = body.decode("utf-8", "surrogateescape")
        if text.startswith("\ufeff"):
            text = text[1:]
        robots._parse_text(text)
        return robots

    def _ignore(self, lineno: int, text: str, why: str) -> None:
        self.ignored_count += 1
        if len(self.ignored) < _MAX_IGNORED:
            self.ignored.append((lineno, _printable(text[:200]), why))

    def _parse_text(self, text: str) -> None:
        group: Group | None = None
        in_agents = False  # the current group is still collecting user-agent lines
        for lineno, raw in enumerate(_LINE_END.split(text), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            key, sep, value = line.partition(":")
            if not sep:
                # Google's quirk: "Disallow /x" (exactly two words) is read as a key line.
                words = line.split()
                if len(words) != 2:
                    self._ignore(lineno, raw, "not a key: value line")
                    continue
                key, value = words
            kind = _KEYS.get(" ".join(key.split()).lower())
            value = value.strip()
            if kind is None:
                self._ignore(lineno, raw, "unknown key")
                continue
            if kind == "ua":
                if group is None or not in_agents:
                    group = Group(agents=[], line=lineno)
                    self.groups.append(group)
                    in_agents = True
                group.agents.append(agent_token(value))
            elif kind == "sitemap":
                if value:
                    self.sitemaps.append(_printable(value))
                else:
                    self._ignore(lineno, raw, "empty sitemap")
            elif group is None:
                self._ignore(lineno, raw, "outside any group (no user-agent line before it)")
            elif kind == "delay":
                # Not an RFC rule, so like any other record it does not end the list of
                # user-agent lines (RFC 9309 2.2.4; Google's parser agrees).
                delay = _parse_delay(value)
                if delay is None:
                    self._ignore(lineno, raw, "crawl-delay is not a non-negative number")
                else:
                    group.crawl_delay = max(delay, group.crawl_delay or 0.0)
            else:
                in_agents = False
                if value and not value.startswith(("/", "*")):
                    self._ignore(lineno, raw, "pattern does not start with / or *")
                    continue
                pattern = normalize_pattern(value)
                group.rules.append(Rule(kind == "allow", _printable(value), pattern, lineno))
        for g in self.groups:
            for token in dict.fromkeys(g.agents):
                if token:
                    self._by_token.setdefault(token, []).append(g)

    # ---- queries

    def _view(self, agent: str) -> _GroupView | None:
        view = self._views.get(agent, self)  # self as "missing" sentinel
        if view is not self:
            return view  # type: ignore[return-value]
        token = agent_token(agent) or "*"
        if token in self._token_views:
            view = self._token_views[token]
        else:
            groups = self._by_token.get(token) or self._by_token.get("*")
            if groups:
                rules = [r for g in groups for r in g.rules]
                delays = [g.crawl_delay for g in groups if g.crawl_delay is not None]
                view = _GroupView(rules, max(delays) if delays else None)
            else:
                view = None
            self._token_views[token] = view
        if len(self._views) > 256:  # agents are few; bound the cache anyway
            self._views.clear()
        self._views[agent] = view
        return view

    def check(self, agent: str, url: str) -> Verdict:
        """May ``agent`` fetch ``url``? ``agent`` is a product token or a User-Agent
        header; ``url`` is absolute or a path with an optional query. Never raises."""
        if self._mode != "rules":
            if self._mode == "allow_all":
                return _ALLOWED
            path = normalize_path(_path_of(url))
            if path == "/robots.txt" or path.startswith("/robots.txt?"):
                return _ALLOWED
            return _DENIED
        view = self._view(agent)
        return _ALLOWED if view is None else view.check(url)

    def crawl_delay(self, agent: str) -> float | None:
        """The Crawl-delay of the group that applies to ``agent``, in seconds, or None."""
        if self._mode != "rules":
            return None
        view = self._view(agent)
        return None if view is None else view.crawl_delay

    def group_for(self, agent: str) -> list[Group]:
        """The groups (unmerged) that apply to ``agent``: its own, else ``*``, else none."""
        if self._mode != "rules":
            return []
        token = agent_token(agent) or "*"
        return list(self._by_token.get(token) or self._by_token.get("*") or [])

    def to_dict(self) -> dict[str, Any]:
        """Groups, rules, sitemaps and ignored lines, for ``crawlkit robots parse``."""
        return {
            "mode": self._mode,
            "bytes": self.size,
            "truncated": self.truncated,
            "groups": [g.to_dict() for g in self.groups],
            "sitemaps": list(self.sitemaps),
            "ignored": [{"line": n, "text": t, "why": w} for n, t, w in self.ignored],
            "ignored_count": self.ignored_count,
        }


def _parse_delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    if not math.isfinite(delay) or delay < 0:
        return None
    return delay


# --------------------------------------------------------------------------------------
# The cache entry and the fetch policy


@dataclass
class RobotsEntry:
    """What a cache keeps per host (``scheme://host:port``).

    ``status`` is the final HTTP status robots.txt was fetched with (after redirects),
    None for a network error. ``body`` is the good file whose rules apply: fetched now
    with 2xx, or an older 2xx copy standing in during a server error (then ``good_at``
    says when it was fetched). ``expires_at`` is when to fetch again; it is never more
    than 24 h after ``fetched_at``. Build entries with :class:`RobotsPolicy`.
    """

    status: int | None
    fetched_at: float
    expires_at: float
    body: bytes | None
    good_at: float | None
    error: str | None
    _rules: RobotsTxt | None = field(default=None, init=False, repr=False, compare=False)

    def rules(self) -> RobotsTxt:
        """The effective rules (computed once, then cached on the entry).

        2xx: the parsed body. 3xx (redirects beyond the limit) and 4xx other than 429:
        allow all. 5xx, 429, other statuses and network errors: the stand-in good copy
        if the entry carries one, else disallow all.
        """
        if self._rules is None:
            status = self.status
            if status is not None and 200 <= status < 300:
                self._rules = RobotsTxt.parse(self.body or b"")
            elif status is not None and 300 <= status < 500 and status != 429:
                self._rules = RobotsTxt.allow_all()
            elif self.body is not None:
                self._rules = RobotsTxt.parse(self.body)
            else:
                self._rules = RobotsTxt.disallow_all()
        return self._rules

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form; ``body`` is base64."""
        return {
            "status": self.status,
            "fetched_at": self.fetched_at,
            "expires_at": self.expires_at,
            "body": None if self.body is None else base64.b64encode(self.body).decode("ascii"),
            "good_at": self.good_at,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RobotsEntry:
        """Inverse of :meth:`to_dict`. Raises ValueError/KeyError/TypeError on junk."""
        body = d.get("body")
        return cls(
            status=None if d.get("status") is None else int(d["status"]),
            fetched_at=float(d["fetched_at"]),
            expires_at=float(d["expires_at"]),
            body=None if body is None else base64.b64decode(body, validate=True),
            good_at=None if d.get("good_at") is None else float(d["good_at"]),
            error=d.get("error"),
        )


class RobotsPolicy:
    """RFC 9309 section 2.3-2.4 and DESIGN.md invariant 3, as one small object.

    * 2xx: the body's rules, trusted for ``max_age`` (at most 24 h).
    * 3xx: the fetcher follows up to ``max_redirects`` hops itself (RFC: at least
      five); a 3xx reaching this object means more hops than that, and the file is
      treated as unavailable: allow all, asked again after ``error_retry``.
    * 4xx except 429: no robots.txt, allow all, trusted for ``max_age``.
    * 5xx, 429, any other status and network errors: disallow all, asked again after
      ``error_retry`` (the failure is cached, so a sick server is not asked on every
      URL), unless the previous entry holds a good copy at most ``stale_ok`` old: then
      that copy's rules stand in (never past ``stale_ok``).

    Bodies are stored truncated to the parsed length (plus one byte, so the parser
    still sees that a line was cut).
    """

    def __init__(
        self,
        *,
        max_age: float = 24 * 3600,
        stale_ok: float = 30 * 86400,
        error_retry: float = 3600,
        max_redirects: int = 5,
    ):
        if max_age <= 0 or error_retry <= 0 or stale_ok < 0 or max_redirects < 0:
            raise UsageError("robots policy times must be positive and max_redirects >= 0")
        # RFC 9309 2.4: a reachable file's copy is not used for more than 24 hours.
        self.max_age = min(float(max_age), MAX_CACHE_AGE)
        self.error_retry = min(float(error_retry), MAX_CACHE_AGE)
        self.stale_ok = float(stale_ok)
        self.max_redirects = max_redirects

    def on_response(
        self, status: int, body: bytes, now: float, previous: RobotsEntry | None = None
    ) -> RobotsEntry:
        """The entry for a robots.txt answered with ``status`` (after redirects)."""
        if 200 <= status < 300:
            kept = body[: MAX_ROBOTS_BYTES + 1]
            return RobotsEntry(status, now, now + self.max_age, kept, now, None)
        if 300 <= status < 400:
            return RobotsEntry(
                status,
                now,
                now + self.error_retry,
                None,
                None,
                f"more than {self.max_redirects} redirects: treated as unavailable, all allowed",
            )
        if 400 <= status < 500 and status != 429:
            return RobotsEntry(status, now, now + self.max_age, None, None, None)
        return self._unreachable(status, f"HTTP {status}", now, previous)

    def on_error(self, error: str, now: float, previous: RobotsEntry | None = None) -> RobotsEntry:
        """The entry for a robots.txt fetch that failed below HTTP (like a 5xx)."""
        return self._unreachable(None, error, now, previous)

    def _unreachable(
        self, status: int | None, error: str, now: float, previous: RobotsEntry | None
    ) -> RobotsEntry:
        if (
            previous is not None
            and previous.body is not None
            and previous.good_at is not None
            and 0 <= now - previous.good_at <= self.stale_ok
        ):
            expires = min(now + self.error_retry, previous.good_at + self.stale_ok)
            return RobotsEntry(
                status,
                now,
                max(expires, now),
                previous.body,
                previous.good_at,
                f"{error}: using the good copy fetched at {previous.good_at:.0f}",
            )
        return RobotsEntry(
            status,
            now,
            now + self.error_retry,
            None,
            None,
            f"{error}: all disallowed until it can be fetched",
        )

    def is_fresh(self, entry: RobotsEntry, now: float) -> bool:
        """True while ``entry`` may be used without fetching robots.txt again.

        Never longer than 24 h after the fetch, whatever ``expires_at`` says (an entry
        read back from disk may come from another configuration), and not when the
        clock runs more than a minute behind the fetch time.
        """
        limit = min(entry.expires_at, entry.fetched_at + MAX_CACHE_AGE)
        return entry.fetched_at - 60 <= now < limit


def rules_for_status(status: int, body: bytes, policy: RobotsPolicy | None = None) -> RobotsTxt:
    """The rules in force when robots.txt was answered with ``status`` and ``body``
    (no earlier copy known), by :class:`RobotsPolicy`."""
    if not 100 <= status <= 599:
        raise UsageError(f"HTTP status must be 100-599, not {status}")
    return (policy or RobotsPolicy()).on_response(status, body, 0.0).rules()


def check_lines(
    robots: RobotsTxt,
    agent: str,
    lines: Iterable[tuple[str, int, str | None]],
) -> Iterator[dict[str, Any]]:
    """One ``{"url", "allowed", "rule"}`` record per non-blank input line, in order.

    ``lines`` are ``(source, line_number, text)`` as from
    :func:`crawlkit.io.read_text_lines`; a line that is not UTF-8 (text None) gives a
    record with ``"url": null``, ``"allowed": false`` and an ``"error"``, so every
    input line is answered (DESIGN.md invariant 1). Streams; constant memory.
    """
    for _source, _lineno, text in lines:
        if text is None:
            yield {"url": None, "allowed": False, "rule": None, "error": "invalid UTF-8"}
            continue
        url = text.strip()
        if not url:
            continue
        verdict = robots.check(agent, url)
        yield {"url": url, "allowed": verdict.allowed, "rule": verdict.rule}
