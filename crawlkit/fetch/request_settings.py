"""Request settings an operator gives: extra headers, cookies, basic auth per host.

One job: for a URL about to be fetched, the headers to add. The fetcher asks
:meth:`RequestSettings.for_url` for every page request (robots.txt is asked for
without them); everything else about a request (the address checked by the network
policy, politeness, robots rules) is as without them.

* ``headers``: ``Name: value`` pairs sent with every request; ``host_headers`` per
  exact host (from a config file's ``[hosts."name"]`` tables) add to or replace them.
* ``cookies``: a Netscape cookies.txt as curl and wget write it (tab-separated:
  domain, include-subdomains, path, secure, expiry, name, value; ``#HttpOnly_``
  lines are cookies, other ``#`` lines comments). A cookie goes to a URL whose host is
  its domain (or a subdomain, when the flag says so), whose path starts with its path,
  over https only when it is secure, and only while unexpired (expiry 0: a session
  cookie, always sent). With a cookies file, cookies the sites set (``Set-Cookie``,
  RFC 6265: Domain only if it covers the host, Path, Expires or Max-Age, Secure) are
  kept too, sent back by the same rules, and saved with :meth:`RequestSettings.save`
  (the crawl keeps them in ``STATE/crawl/cookies.txt`` for its next run).
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
import contextlib
import email.utils
import netrc
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from crawlkit import io
from crawlkit.errors import UsageError

__all__ = ["Cookie", "RequestSettings", "parse_header", "read_cookies", "read_netrc"]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def parse_header(text: str, where: str = "--header") -> tuple[str, str]:
    """``Name: value`` as a pair; a missing colon, a bad name or a control character
    in the value is a UsageError naming ``where``."""
    name, colon, value = text.partition(":")
    name = name.strip()
    value = value.strip()
    if not colon or not _TOKEN.fullmatch(name):
        raise UsageError(f"{where}: {text!r} is not 'Name: value' with a valid header name")
    if _BAD_VALUE.search(value):
        raise UsageError(f"{where}: the value of {name} holds a control character")
    return name, value


@dataclass(frozen=True, slots=True)
class Cookie:
    domain: str
    subdomains: bool
    path: str
    secure: bool
    expires: int
    name: str
    value: str

    def matches(self, scheme: str, host: str, path: str, now: float) -> bool:
        if self.expires and self.expires < now:
            return False
        if self.secure and scheme != "https":
            return False
        if host != self.domain and not (self.subdomains and host.endswith("." + self.domain)):
            return False
        return path.startswith(self.path) if self.path else True


def read_cookies(path: Path) -> list[Cookie]:
    """The cookies of a Netscape cookies.txt (see the module docstring)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--cookies {path}: cannot read it ({exc})") from exc
    out: list[Cookie] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#HttpOnly_"):
            line = line[len("#HttpOnly_") :]
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 7:
            raise UsageError(
                f"{path}:{number}: a cookie line has 7 tab-separated fields "
                f"(domain, subdomains, path, secure, expiry, name, value), "
                f"not {len(fields)}"
            )
        domain, sub, cpath, secure, expiry, name, value = fields
        if sub.upper() not in ("TRUE", "FALSE") or secure.upper() not in ("TRUE", "FALSE"):
            raise UsageError(f"{path}:{number}: the subdomain and secure fields are TRUE or FALSE")
        if not expiry.strip().isdigit():
            raise UsageError(f"{path}:{number}: the expiry is seconds since 1970, not {expiry!r}")
        if not domain.strip(". ") or not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            raise UsageError(
                f"{path}:{number}: a cookie needs a domain, a name and a value "
                "without control characters"
            )
        out.append(
            Cookie(
                domain.strip().lstrip(".").lower(),
                sub.upper() == "TRUE",
                cpath,
                secure.upper() == "TRUE",
                int(expiry),
                name,
                value,
            )
        )
    return out


def parse_set_cookie(value: str, url: str, now: float) -> Cookie | None:
    """The cookie of a ``Set-Cookie`` value sent for ``url`` (RFC 6265 5.2-5.3), or
    None when it is malformed or its Domain does not cover the host."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    pair, *attributes = value.split(";")
    name, eq, cvalue = pair.partition("=")
    name, cvalue = name.strip(), cvalue.strip()
    if not eq or not _TOKEN.fullmatch(name) or _BAD_VALUE.search(cvalue):
        return None
    domain, subdomains = host, False
    path = parts.path.rpartition("/")[0] or "/" if parts.path.count("/") > 1 else "/"
    expires, secure = 0, False
    for attribute in attributes:
        key, _, arg = attribute.strip().partition("=")
        key, arg = key.strip().lower(), arg.strip()
        if key == "domain" and arg:
            wanted = arg.lstrip(".").lower()
            if host != wanted and not host.endswith("." + wanted):
                return None  # a site may not set cookies for another
            domain, subdomains = wanted, True
        elif key == "path" and arg.startswith("/"):
            path = arg
        elif key == "max-age" and arg.lstrip("-").isdigit():
            expires = int(now + int(arg)) if int(arg) > 0 else 1  # 1: already expired
        elif key == "expires" and not any(
            a.strip().lower().startswith("max-age") for a in attributes
        ):
            with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
                expires = max(1, int(email.utils.parsedate_to_datetime(arg).timestamp()))
        elif key == "secure":
            secure = True
    return Cookie(domain, subdomains, path, secure, expires, name, cvalue)


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
        self.credentials = dict(credentials or {})
        self.keep_cookies = keep_cookies
        # cookies the sites set, by (domain, path, name); the newest wins
        self.site_cookies: dict[tuple[str, str, str], Cookie] = {}
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
            known = {(c.domain, c.path, c.name) for c in self.site_cookies.values()}
            every = [c for c in self.cookies if (c.domain, c.path, c.name) not in known]
            every += self.site_cookies.values()
            jar = [c for c in every if c.matches(parts.scheme, host, parts.path or "/", now)]
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
                cookie = parse_set_cookie(value, url, self.clock())
                if cookie is not None:
                    self.site_cookies[(cookie.domain, cookie.path, cookie.name)] = cookie

    def save(self, path: Path) -> None:
        """Write the cookies the sites set, unexpired, as a Netscape cookies.txt."""
        now = self.clock()
        lines = ["# Netscape HTTP Cookie File (cookies the sites set; crawlkit)"]
        for c in self.site_cookies.values():
            if c.expires and c.expires < now:
                continue
            lines.append(
                "\t".join(
                    [
                        ("." if c.subdomains else "") + c.domain,
                        "TRUE" if c.subdomains else "FALSE",
                        c.path,
                        "TRUE" if c.secure else "FALSE",
                        str(c.expires),
                        c.name,
                        c.value,
                    ]
                )
            )
        io.atomic_write_bytes(path, ("\n".join(lines) + "\n").encode("utf-8"))

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
