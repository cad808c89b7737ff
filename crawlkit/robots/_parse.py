"""The robots.txt parser: bytes to groups, rules and sitemaps (RFC 9309 2.1-2.2, 2.5)."""

from __future__ import annotations

import math
import re
from typing import Any

from crawlkit.robots._match import GroupView
from crawlkit.robots._normalize import agent_token, normalize_pattern, target_of
from crawlkit.robots._rules import ALLOWED, DENIED, Group, Rule, Verdict

#: How much of a robots.txt is parsed (RFC 9309 section 2.5 asks for at least 500 KiB).
MAX_ROBOTS_BYTES = 512 * 1024

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
# Keys read by their start, as Google's parser reads them: "User-agents: *" or
# "Disallowed: /x" are what their writers meant, and read exactly they were unknown
# keys (the whole file's rules lost with the first). Only the keys that restrict: an
# "Allowed:" line stays unknown, which errs towards asking less.
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("user-agent", "ua"),
    ("useragent", "ua"),
    ("user agent", "ua"),
    ("disallow", "disallow"),
)
_LINE_END = re.compile(r"\r\n|\r|\n")


def _kind(key: str) -> str | None:
    """What a lower-cased key names: one of ``_KEYS``, or a key starting as one of
    ``_PREFIXES`` does."""
    kind = _KEYS.get(key)
    if kind is None:
        kind = next((k for prefix, k in _PREFIXES if key.startswith(prefix)), None)
    return kind


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
        self._views: dict[str, GroupView | None] = {}
        self._token_views: dict[str, GroupView | None] = {}

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
        """Parse the first 512 KiB of a robots.txt. Never raises.

        The bytes are UTF-8 (RFC 9309 2.3), or UTF-16 when they start with its
        byte-order mark; invalid UTF-8 bytes are kept as their percent-escapes, invalid
        UTF-16 units become U+FFFD.
        """
        robots = cls()
        robots.size = len(body)
        if len(body) > MAX_ROBOTS_BYTES:
            robots.truncated = True
            body = body[:MAX_ROBOTS_BYTES]
        utf16 = _utf16_codec(body)
        if utf16 is not None:
            robots._parse_text(_cut_line(body[2:].decode(utf16, "replace"), robots.truncated))
            return robots
        if robots.truncated:
            cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
            body = body[: cut + 1] if cut >= 0 else b""
        # a UTF-8 BOM, or the first byte or two of one (Google's parser skips those as
        # well; kept, they made the first line an unknown key: a file starting
        # "\xef\xbbUser-agent: *" with "Disallow: /" allowed everything)
        for bom in (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"):
            if body.startswith(bom):
                body = body[len(bom) :]
                break
        text = body.decode("utf-8", "surrogateescape")
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
            kind = _kind(" ".join(key.split()).lower())
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
                # user-agent lines (RFC 9309 2.2.4); Google's parser does the same (its
                # HandleCrawlDelay leaves seen_separator_ unset). So "User-agent: *",
                # "Crawl-delay: 120", "User-agent: 008", "Disallow: /" forbids all to
                # every agent (bitbucket.org's file), where protego ends the group.
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

    def _view(self, agent: str) -> GroupView | None:
        """The compiled group for ``agent`` (None: no rules), cached per agent string."""
        if self._mode != "rules":
            if len(self._views) < 256:
                self._views[agent] = None
            return None
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
                view = GroupView(rules, max(delays) if delays else None)
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
        try:
            view = self._views[agent]
        except KeyError:
            view = self._view(agent)
        if view is not None:
            return view.check(url)
        if self._mode == "disallow_all":
            path = target_of(url)
            if path == "/robots.txt" or path.startswith("/robots.txt?"):
                return ALLOWED
            return DENIED
        return ALLOWED

    def prepare(self, agent: str) -> RobotsTxt:
        """Compile the group for ``agent`` now rather than on the first check; returns self.

        A typical file compiles in about a millisecond. A hostile 500 KiB file of tens
        of thousands of wildcard rules takes a second or two, so an event loop may
        prefer ``await asyncio.to_thread(robots.prepare, agent)`` (``re`` compiles in
        Python code and lets other threads run between bytecodes).
        """
        self._view(agent)
        return self

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


def _utf16_codec(body: bytes) -> str | None:
    """``"utf-16-le"`` or ``"utf-16-be"`` if ``body`` starts with that byte-order mark.

    RFC 9309 2.3 wants UTF-8, but some sites save robots.txt from Windows editors as
    UTF-16 with a BOM (store.usps.com, www.myvue.com). Read as UTF-8, every line is an
    unknown key, so the site's Disallow rules were lost and everything was allowed; the
    BOM says unambiguously how to read it. (Google's parser reads such a file as
    empty; honouring its rules is the polite reading.)
    """
    if body.startswith(b"\xff\xfe"):
        return "utf-16-le"
    if body.startswith(b"\xfe\xff"):
        return "utf-16-be"
    return None


def _cut_line(text: str, truncated: bool) -> str:
    """``text`` without its last, unfinished line if the file was cut (see ``parse``)."""
    if not truncated:
        return text
    cut = max(text.rfind("\n"), text.rfind("\r"))
    return text[: cut + 1] if cut >= 0 else ""


def _parse_delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    if not math.isfinite(delay) or delay < 0:
        return None
    return delay
