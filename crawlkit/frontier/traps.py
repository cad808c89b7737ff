"""Spider-trap limits: which URLs the frontier refuses to queue, and why.

Each rule looks at one canonical URL (and its depth from a seed) and answers with a
refusal reason, or None to accept. The reasons are the ``refused`` field of the
refused records the frontier writes (docs/design.md invariant 1: a refused URL comes out
as a record with its reason, never silently dropped):

``url-length``
    the URL is longer than ``max_url_length`` characters (default 2,000).
``path-depth``
    the path has more than ``max_path_depth`` segments (default 15).
``repeated-segment``
    one path segment occurs ``max_segment_repeats`` times or more (default 3:
    ``/a/b/a/b/a/`` is a relative-link loop).
``query-params``
    more than ``max_query_params`` query parameters (default 10): faceted-search
    explosions.
``param-denylist``
    a query parameter (or a ``;name=`` path parameter) whose name is on the denylist:
    session ids that make every visit a new URL (names that also carry a page's own
    id or word, ``sid``, ``_sid`` and ``session``, only with a value that looks like a generated
    token: ``?sid=12`` is a story, ``?sid=4x20931877`` a session). Canonicalization at ``--rules
    default`` already drops the common ones, so this catches what other rules or
    other tools let through; the list can be extended.
``session-id``
    a session id in the path: ``;jsessionid=...``, ASP.NET's ``/(S(...))/`` (also
    ``/(X(1)S(...))/`` and 1.x's ``/(24 letters and digits)/``), or a segment named
    like a session parameter (``/s/``, ``/sid/``, ``/session/``...)
    followed by a token with a digit in it (``/s/4x20931877/catalog/``).
``calendar``
    a date in the path or query (``/2031/01/``, ``2031-01-05``, ``year=2031``) more
    than ``future_years`` years after the current year: the "next month" link of a
    calendar never ends. Dates in the past are left to ``max-depth`` and the site
    budget, because archives of old months are real content.
``max-depth``
    the URL's ``depth`` (link hops from a seed) is greater than ``max_depth``
    (default 20, as Heritrix's hop limit; None turns it off). A page requisite is
    exempt (its limit is its requisite hops, ``crawl/archive.py``): the deepest pages
    a crawl fetches get their images and stylesheets, as Heritrix's transclusions
    do. Unlike the other limits this one depends on the path a URL was found by, so
    the seen set must not hold a URL refused by it: a shorter path found later
    queues it. ``seen-merge`` applies it before the seen set (:func:`depth_refusal`),
    the frontier again after.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawlkit.patterns import MAX_URL_LENGTH
from crawlkit.url import IF_TOKEN, looks_like_session_token, read_denylist

__all__ = [
    "DEFAULT_PARAM_DENYLIST",
    "REASONS",
    "TrapChecker",
    "TrapLimits",
    "depth_refusal",
    "read_denylist",
]

REASONS = (
    "url-length",
    "path-depth",
    "repeated-segment",
    "query-params",
    "param-denylist",
    "session-id",
    "calendar",
    "max-depth",
)

#: Session-id parameter names (compared lowercased); a trailing ``*`` is a prefix.
DEFAULT_PARAM_DENYLIST = (
    # name=token: only with a value that looks like a session token (url.py); these
    # names also carry a page's own id or word (?sid=12, ?session=keynote)
    "sid=token",
    "sess=token",
    "sessid",
    "session=token",
    "sessionid",
    "_sessionid",
    "bv_sessionid",
    "_sid=token",
    "session_id",
    "session-id",
    "phpsessid",
    "jsessionid",
    "aspsessionid*",
    "asp.net_sessionid",
    "cfid",
    "cftoken",
    "zenid",
    "oscsid",
    "s_id=token",
    "sessiontoken",
    "sesskey",
)

_DATE = re.compile(r"(?<![0-9])(1[89][0-9]{2}|2[0-9]{3})(?:[-/_.]|%2[fF])(0[1-9]|1[0-2])(?![0-9])")
_YEAR_PARAM = re.compile(r"(?:^|[?&;])(?:year|yr|y)=(1[89][0-9]{2}|2[0-9]{3})(?![0-9])", re.I)
_TOKEN = re.compile(r"^[A-Za-z0-9_.~-]+$")
# ASP.NET cookieless sessions put the id in one path segment: /(S(lit3py55t21z5v55vlm25s55))/,
# or with other cookieless values beside it, /(X(1)S(lit3...))/ or /(A(...)S(...)F(...))/
# (a generated value of 16 or more somewhere among them), or ASP.NET 1.x's bare 24
# letters and digits, /(lit3py55t21z5v55vlm25s55)/. IA's surt strips all three.
_ASPNET_VALUE = r"[A-Za-z]\([A-Za-z0-9_-]*\)"
_ASPNET_SESSION = re.compile(
    rf"/\((?:{_ASPNET_VALUE})*[A-Za-z]\([A-Za-z0-9_-]{{16,}}\)(?:{_ASPNET_VALUE})*\)"
    r"|/\((?=[a-z]*[0-9])(?=[0-9]*[a-z])[a-z0-9]{24}\)/"
)


@dataclass(frozen=True)
class TrapLimits:
    """The trap limits (docs/design.md "Numbers"); every one can be changed by a flag."""

    max_url_length: int = MAX_URL_LENGTH
    max_path_depth: int = 15
    max_segment_repeats: int = 3
    max_query_params: int = 10
    max_depth: int | None = 20
    future_years: int = 1
    denylist: tuple[frozenset[str], tuple[str, ...]] = field(
        default_factory=lambda: read_denylist(DEFAULT_PARAM_DENYLIST)
    )

    def with_denylist_files(self, paths: Iterable[str | Path]) -> TrapLimits:
        """These limits with the names in ``paths`` added to the denylist."""
        lines = list(DEFAULT_PARAM_DENYLIST)
        exact, prefixes = self.denylist
        lines.extend(exact)
        lines.extend(p + "*" for p in prefixes)
        for path in paths:
            lines.extend(Path(path).read_text("utf-8").splitlines())
        return TrapLimits(
            self.max_url_length,
            self.max_path_depth,
            self.max_segment_repeats,
            self.max_query_params,
            self.max_depth,
            self.future_years,
            read_denylist(lines),
        )


def depth_refusal(record: Mapping[str, Any], max_depth: int | None) -> tuple[str, str] | None:
    """``("max-depth", detail)`` if ``record`` is more than ``max_depth`` link hops from
    a seed and no page requisite (see the module docstring), else None."""
    depth = record.get("depth")
    if max_depth is None or type(depth) is not int or depth <= max_depth:
        return None
    return None if record.get("reason") == "requisite" else _too_deep(depth, max_depth)


def _too_deep(depth: int, max_depth: int) -> tuple[str, str]:
    return "max-depth", f"depth {depth} > {max_depth}"


class TrapChecker:
    """Applies :class:`TrapLimits` to canonical URLs; ``now`` fixes the calendar's year."""

    def __init__(self, limits: TrapLimits | None = None, *, now: float | None = None):
        self.limits = limits or TrapLimits()
        year = time.gmtime(time.time() if now is None else now).tm_year
        self.last_year = year + self.limits.future_years
        self._deny_exact, self._deny_prefixes = self.limits.denylist

    def check(self, url: str, depth: int | None = None) -> tuple[str, str] | None:
        """``(reason, detail)`` if ``url`` is refused, None if it may be queued."""
        lim = self.limits
        if len(url) > lim.max_url_length:
            return "url-length", f"{len(url)} characters > {lim.max_url_length}"
        if lim.max_depth is not None and depth is not None and depth > lim.max_depth:
            return _too_deep(depth, lim.max_depth)
        start = url.find("//")
        slash = url.find("/", start + 2 if start >= 0 else 0)
        rest = url[slash:] if slash >= 0 else "/"
        path, _, query = rest.partition("?")
        segments = path.split("/")
        if "" in segments:
            segments = [s for s in segments if s]
        if len(segments) > lim.max_path_depth:
            return "path-depth", f"{len(segments)} segments > {lim.max_path_depth}"
        if len(segments) >= lim.max_segment_repeats and len(set(segments)) < len(segments):
            counts: dict[str, int] = {}
            for seg in segments:
                counts[seg] = counts.get(seg, 0) + 1
                if counts[seg] >= lim.max_segment_repeats:
                    return "repeated-segment", f"{seg[:80]!r} {counts[seg]} times"
        if query:
            params = [p for p in query.split("&") if p]
            if len(params) > lim.max_query_params:
                return "query-params", f"{len(params)} parameters > {lim.max_query_params}"
            for piece in params:
                name, _, value = piece.partition("=")
                name = name.lower()
                if self._denied(name) or (
                    name + IF_TOKEN in self._deny_exact and looks_like_session_token(value)
                ):
                    return "param-denylist", name[:80]
        if ";" in path:
            for piece in path.split(";")[1:]:
                name = piece.split("=", 1)[0].lower()
                if "=" in piece and self._named(name):
                    return "session-id", f";{name[:80]}="
        if "(" in path and _ASPNET_SESSION.search(path):
            return "session-id", "asp.net cookieless session"
        for i in range(len(segments) - 1):
            seg = segments[i]
            if len(seg) <= 16 and (seg == "s" or self._named(seg.lower())):
                token = segments[i + 1]
                if len(token) >= 6 and _TOKEN.match(token) and any(c.isdigit() for c in token):
                    return "session-id", f"/{seg}/{token[:40]}/"
        year = self._latest_year(rest)
        if year > self.last_year:
            return "calendar", f"year {year} > {self.last_year}"
        return None

    def _named(self, name: str) -> bool:
        """``name`` is on the denylist, whatever its value or only with a token (a path
        segment or parameter so named: the path rules look at what follows)."""
        return self._denied(name) or name + IF_TOKEN in self._deny_exact

    def _denied(self, name: str) -> bool:
        """``name`` is on the denylist whatever its value."""
        return name in self._deny_exact or (
            bool(self._deny_prefixes) and name.startswith(self._deny_prefixes)
        )

    @staticmethod
    def _latest_year(rest: str) -> int:
        latest = 0
        if _DATE.search(rest):
            for match in _DATE.finditer(rest):
                latest = max(latest, int(match.group(1)))
        if "=" in rest and _YEAR_PARAM.search(rest):
            for match in _YEAR_PARAM.finditer(rest):
                latest = max(latest, int(match.group(1)))
        return latest
