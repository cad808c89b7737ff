"""Request settings an operator gives: extra headers, cookies, basic auth per host.

One job: for a URL about to be fetched, the headers to add. The fetcher asks
:meth:`RequestSettings.for_url` for every page request (robots.txt is asked for
without them); everything else about a request (the address checked by the network
policy, politeness, robots rules) is as without them.

* ``headers``: ``Name: value`` pairs sent with every request; ``host_headers`` per
  exact host (from a config file's ``[hosts."name"]`` tables) add to or replace them.
* ``cookies``: a Netscape cookies.txt as curl and wget write it (see
  :mod:`crawlkit.fetch.cookies`). A cookie goes to a URL whose host is its domain (or
  a subdomain, when the flag says so; never for an IP address), whose path starts
  with its path, over https only when it is secure, and only while unexpired (expiry
  0: a session cookie, always sent). With a cookies file, cookies the sites set
  (``Set-Cookie``, RFC 6265, checked as :func:`~crawlkit.fetch.cookies.parse_set_cookie`
  says: no control characters, no Domain that is a public suffix or another site's)
  are kept too, in a :class:`~crawlkit.fetch.cookies.CookieJar` capped at 180 a domain
  and 3,000 in all, sent back by the same rules, and saved with
  :meth:`RequestSettings.save` (the crawl keeps them in ``STATE/crawl/cookies.txt``,
  mode 0600, for its next run, which skips a bad line of it with a warning).
* ``credentials``: a netrc file's ``machine`` entries give HTTP basic auth for exactly
  that host (``default`` entries are ignored: credentials never go to a host the
  operator did not name).

A malformed header, cookies file or netrc is a :class:`~crawlkit.errors.UsageError`
naming the file and line. The secrets never leave this object except in the request
itself (and so in the WARC request record, as in any archive of an authenticated
crawl): :meth:`RequestSettings.to_json`, which reports and settings files use, gives
header names, cookie counts and netrc hosts only.
"""

from __future__ import annotations

import base64
import netrc
import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from crawlkit.errors import UsageError
from crawlkit.fetch.cookies import (
    TOKEN,
    Cookie,
    CookieJar,
    parse_set_cookie,
    read_cookies,
    write_cookies,
)

__all__ = [
    "Cookie",
    "RequestSettings",
    "parse_header",
    "parse_set_cookie",
    "read_cookies",
    "read_netrc",
]

_TOKEN = TOKEN
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


# Headers an operator's header would make lie: the agent robots.txt was matched for
# (sent another, a site's "Disallow: /" for that agent was fetched through), the host
# the URL's robots.txt, politeness and address are for, and the message's framing.
_FETCHERS_OWN = {
    "user-agent": "give it with --agent (robots.txt is matched for its first token)",
    "host": "it is the URL's host, whose robots.txt, gap and address the request has",
    "content-length": "the fetcher frames the request",
    "transfer-encoding": "the fetcher frames the request",
    "connection": "the fetcher manages its connections",
}


def parse_header(text: str, where: str = "--header") -> tuple[str, str]:
    """``Name: value`` as a pair; a missing colon, a bad name, a control character in
    the value or a header the fetcher owns (User-Agent, Host, the framing) is a
    UsageError naming ``where``."""
    name, colon, value = text.partition(":")
    name = name.strip()
    value = value.strip()
    if not colon or not _TOKEN.fullmatch(name):
        raise UsageError(f"{where}: {text!r} is not 'Name: value' with a valid header name")
    why = _FETCHERS_OWN.get(name.lower())
    if why is not None:
        raise UsageError(f"{where}: {name} cannot be set here: {why}")
    if _BAD_VALUE.search(value):
        raise UsageError(f"{where}: the value of {name} holds a control character")
    return name, value


def read_netrc(path: Path) -> dict[str, tuple[str, str]]:
    """host -> (login, password) of a netrc file's ``machine`` entries."""
    try:
        parsed = netrc.netrc(str(path))
    except netrc.NetrcParseError as exc:
        raise UsageError(f"{path}:{exc.lineno}: {exc.msg}") from exc
    except OSError as exc:
        raise UsageError(f"--netrc {path}: cannot read it ({exc})") from exc
    out: dict[str, tuple[str, str]] = {}
    for host, (login, _account, password) in parsed.hosts.items():
        if host == "default":
            continue
        out[host.lower()] = (login or "", password or "")
    return out


class RequestSettings:
    """Headers to add per URL (see the module docstring)."""

    def __init__(
        self,
        headers: Iterable[tuple[str, str]] = (),
        *,
        host_headers: Mapping[str, Iterable[tuple[str, str]]] | None = None,
        cookies: Iterable[Cookie] = (),
        credentials: Mapping[str, tuple[str, str]] | None = None,
        keep_cookies: bool = False,
        clock: Any = time.time,
    ):
        self.headers = tuple(headers)
        self.host_headers = {h.lower(): tuple(v) for h, v in (host_headers or {}).items()}
        self.cookies = tuple(cookies)
        # the operator's cookies, indexed by domain as the sites' are (never capped)
        self._given = CookieJar(per_domain=None, total=None)
        for cookie in self.cookies:
            self._given.set(cookie)
        self.credentials = dict(credentials or {})
        self.keep_cookies = keep_cookies
        # cookies the sites set, by (domain, path, name); the newest wins
        self.site_cookies = CookieJar()
        self.clock = clock

    def __bool__(self) -> bool:
        return bool(
            self.headers
            or self.host_headers
            or self.cookies
            or self.credentials
            or self.keep_cookies
            or self.site_cookies
        )

    def for_url(self, url: str) -> dict[str, str]:
        """The headers to add to a request for ``url``."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        out: dict[str, str] = {}
        for name, value in (*self.headers, *self.host_headers.get(host, ())):
            out = {k: v for k, v in out.items() if k.lower() != name.lower()}
            out[name] = value
        if self.cookies or self.site_cookies:
            now = self.clock()
            path = parts.path or "/"
            jar = self.site_cookies.matching(parts.scheme, host, path, now)
            # a site's cookie replaces the operator's of the same key, sent or not
            jar += [
                c
                for c in self._given.matching(parts.scheme, host, path, now)
                if self.site_cookies.get(c.key) is None
            ]
            if jar:  # longer paths first (RFC 6265 5.4)
                jar.sort(key=lambda c: -len(c.path))
                out["Cookie"] = "; ".join(f"{c.name}={c.value}" for c in jar)
        login = self.credentials.get(host)
        if login is not None:
            token = base64.b64encode(f"{login[0]}:{login[1]}".encode()).decode("ascii")
            out["Authorization"] = f"Basic {token}"
        return out

    def note_response(self, url: str, headers: Iterable[tuple[str, str]]) -> None:
        """Keep the cookies a response sets (only with ``keep_cookies``)."""
        if not self.keep_cookies:
            return
        for name, value in headers:
            if name.lower() == "set-cookie":
                now = self.clock()
                cookie = parse_set_cookie(value, url, now)
                if cookie is not None:
                    self.site_cookies.set(cookie, now)

    def load(self, path: Path, on_bad: Callable[[str], None]) -> None:
        """Take in the cookies the sites set that a run saved at ``path`` (:meth:`save`),
        if there is such a file; ``on_bad`` is told of a bad line, which is skipped."""
        if not path.exists():
            return
        for cookie in read_cookies(path, on_bad=on_bad):
            self.site_cookies[(cookie.domain, cookie.path, cookie.name)] = cookie

    def save(self, path: Path) -> None:
        """Write the cookies the sites set, unexpired (:func:`write_cookies`)."""
        write_cookies(path, self.site_cookies.values(), self.clock())

    def to_json(self) -> dict[str, Any]:
        """What may be shown: header names, cookie counts by domain, netrc hosts."""
        domains: dict[str, int] = {}
        for c in self.cookies:
            domains[c.domain] = domains.get(c.domain, 0) + 1
        return {
            "headers": [name for name, _ in self.headers],
            "host_headers": {h: [n for n, _ in v] for h, v in self.host_headers.items()},
            "cookies": domains,
            "basic_auth_hosts": sorted(self.credentials),
        }

    def __repr__(self) -> str:
        return f"RequestSettings({self.to_json()})"
