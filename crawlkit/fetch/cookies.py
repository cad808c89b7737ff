"""Cookies: the Netscape cookies.txt format, ``Set-Cookie`` (RFC 6265) and a capped jar.

One job: which cookies exist, and which go to a URL. :mod:`request_settings` turns
them into the ``Cookie`` header.

* :func:`read_cookies` reads a cookies.txt as curl and wget write it (tab-separated:
  domain, include-subdomains, path, secure, expiry, name, value; ``#HttpOnly_`` lines
  are cookies, other ``#`` lines comments). An operator's file is strict (a bad line
  is a :class:`~crawlkit.errors.UsageError` naming it); the crawl's own jar is read
  with ``on_bad``, which is told of each bad line and the line is skipped, so one
  cookie a site set can never stop the next run.
* :func:`parse_set_cookie` keeps what a site may set, by RFC 6265 5.2-5.3: a control
  character (C0, DEL, C1; tab included, since it separates the fields of the saved
  jar) in the name, value, Domain or Path refuses the cookie; a Domain must
  domain-match the request host (5.1.3: a host name ending in ``.`` + Domain, never
  an IP address); a Domain that is a public suffix (the Public Suffix List, private
  section included: ``co.uk``, ``github.io``, a bare ``test``) is refused unless it is
  the host itself, which then gets a host-only cookie (5.3 step 5); an IP host's
  cookie is always host-only.
* :class:`CookieJar` keeps cookies by domain, at most ``per_domain`` a domain (180)
  and ``total`` in all (3,000), about what browsers keep (Chrome 180 and 3,300,
  Firefox 180 and 3,000); past a limit the cookie set longest ago goes first (RFC
  6265 5.3 step 12 leaves the choice to the agent). A request looks only at the
  domains its host can match (the host and its parent domains), not at every cookie.
"""

from __future__ import annotations

import contextlib
import email.utils
import ipaddress
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from crawlkit import streams
from crawlkit.errors import UsageError
from crawlkit.url import is_public_suffix

__all__ = [
    "Cookie",
    "CookieJar",
    "cookie_jar",
    "cookie_problem",
    "parse_set_cookie",
    "read_cookies",
    "write_cookies",
]

TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# C0 controls (tab included), DEL and C1 controls: a tab would add a field to the saved
# jar, and str.splitlines() would cut a line at \x1c-\x1e or \x85.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
PER_DOMAIN = 180
TOTAL = 3000


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Cookie:
    domain: str
    subdomains: bool
    path: str
    secure: bool
    expires: int
    name: str
    value: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.domain, self.path, self.name)

    def matches(self, scheme: str, host: str, path: str, now: float) -> bool:
        if self.expires and self.expires < now:
            return False
        if self.secure and scheme != "https":
            return False
        if host != self.domain and not (
            self.subdomains and host.endswith("." + self.domain) and not is_ip(host)
        ):
            return False
        return path_match(path, self.path) if self.path else True


def path_match(path: str, cookie_path: str) -> bool:
    """RFC 6265 5.1.4: ``/sub`` covers ``/sub`` and ``/sub/...``, not ``/subway``."""
    if not path.startswith(cookie_path):
        return False
    rest = path[len(cookie_path) :]
    return not rest or cookie_path.endswith("/") or rest.startswith("/")


def cookie_problem(cookie: Cookie) -> str | None:
    """Why a site could not have set ``cookie`` (see :func:`parse_set_cookie`), or None."""
    for field in (cookie.domain, cookie.path, cookie.name, cookie.value):
        if CONTROL.search(field):
            return "a field holds a control character"
    if not TOKEN.fullmatch(cookie.name):
        return "the name is not a token"
    if cookie.subdomains and not is_ip(cookie.domain) and is_public_suffix(cookie.domain):
        return f"{cookie.domain} is a public suffix"
    return None


def read_cookies(path: Path, *, on_bad: Callable[[str], None] | None = None) -> list[Cookie]:
    """The cookies of a Netscape cookies.txt (see the module docstring). Without
    ``on_bad`` a bad line is a UsageError; with it, ``on_bad`` gets the one-line reason
    (``PATH:LINE: ...``) and the line is skipped, as is a cookie no site could set."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--cookies {path}: cannot read it ({exc})") from exc
    out: list[Cookie] = []
    # split("\n"), not splitlines(): the format's lines end only at \n
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.removesuffix("\r")
        if line.startswith("#HttpOnly_"):
            line = line[len("#HttpOnly_") :]
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            cookie = _cookie_line(line)
            why = cookie_problem(cookie) if on_bad is not None else None
            if why is not None:
                raise ValueError(f"{why}; a site cannot set this cookie")
        except ValueError as exc:
            if on_bad is None:
                raise UsageError(f"{path}:{number}: {exc}") from None
            on_bad(f"{path}:{number}: {exc}; line skipped")
            continue
        out.append(cookie)
    return out


def cookie_jar(state: str | os.PathLike[str]) -> Path:
    """Where ``crawlkit crawl`` keeps the cookies the sites set (``--cookies``), in a
    crawl state (a worker's or a fleet shard's too): read back by the next run."""
    return Path(state) / "crawl" / "cookies.txt"


def write_cookies(path: Path, cookies: Iterable[Cookie], now: float) -> None:
    """Write ``cookies``, unexpired at ``now``, as a Netscape cookies.txt of mode 0600
    (cookies are secrets, docs/design.md invariant 9); a cookie that would not read
    back (see :func:`cookie_problem`) is left out."""
    lines = ["# Netscape HTTP Cookie File (cookies the sites set; crawlkit)"]
    for c in cookies:
        if (c.expires and c.expires < now) or cookie_problem(c) is not None:
            continue
        subdomains = "TRUE" if c.subdomains else "FALSE"
        secure = "TRUE" if c.secure else "FALSE"
        domain = ("." if c.subdomains else "") + c.domain
        lines.append(
            "\t".join([domain, subdomains, c.path, secure, str(c.expires), c.name, c.value])
        )
    streams.atomic_write_bytes(path, ("\n".join(lines) + "\n").encode("utf-8"), mode=0o600)


def _cookie_line(line: str) -> Cookie:
    fields = line.split("\t")
    if len(fields) != 7:
        raise ValueError(
            "a cookie line has 7 tab-separated fields "
            f"(domain, subdomains, path, secure, expiry, name, value), not {len(fields)}"
        )
    domain, sub, cpath, secure, expiry, name, value = fields
    if sub.upper() not in ("TRUE", "FALSE") or secure.upper() not in ("TRUE", "FALSE"):
        raise ValueError("the subdomain and secure fields are TRUE or FALSE")
    if not expiry.strip().isdigit():
        raise ValueError(f"the expiry is seconds since 1970, not {expiry!r}")
    if (
        not domain.strip(". ")
        or not TOKEN.fullmatch(name)
        or CONTROL.search(value)
        or CONTROL.search(cpath)
        or CONTROL.search(domain)
    ):
        raise ValueError("a cookie needs a domain, a name and a value without control characters")
    return Cookie(
        domain.strip().lstrip(".").lower(),
        sub.upper() == "TRUE",
        cpath,
        secure.upper() == "TRUE",
        int(expiry),
        name,
        value,
    )


def parse_set_cookie(value: str, url: str, now: float) -> Cookie | None:
    """The cookie of a ``Set-Cookie`` value sent for ``url`` (RFC 6265 5.2-5.3, see the
    module docstring), or None when it is malformed or may not be set by this host."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    pair, *attributes = value.split(";")
    name, eq, cvalue = pair.partition("=")
    name, cvalue = name.strip(), cvalue.strip()
    if not eq or not TOKEN.fullmatch(name) or CONTROL.search(cvalue):
        return None
    domain, subdomains = host, False
    path = parts.path.rpartition("/")[0] or "/" if parts.path.count("/") > 1 else "/"
    expires, secure = 0, False
    for attribute in attributes:
        key, _, arg = attribute.strip().partition("=")
        key, arg = key.strip().lower(), arg.strip()
        if CONTROL.search(arg) and key in ("domain", "path"):
            return None
        if key == "domain" and arg:
            wanted = arg.lstrip(".").lower()
            if wanted == host:
                domain, subdomains = host, not is_ip(host) and not is_public_suffix(host)
            elif is_ip(host) or not host.endswith("." + wanted) or is_public_suffix(wanted):
                return None  # a site may not set cookies for another (RFC 6265 5.3 step 5-6)
            else:
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


class CookieJar:
    """Cookies by (domain, path, name), the newest setting winning, capped per domain
    and in all (see the module docstring); ``per_domain``/``total`` None: no cap."""

    def __init__(self, per_domain: int | None = PER_DOMAIN, total: int | None = TOTAL):
        self.per_domain = per_domain
        self.total = total
        # insertion order is the order of setting: the first is the one set longest ago
        self._all: dict[tuple[str, str, str], Cookie] = {}
        self._by_domain: dict[str, dict[tuple[str, str, str], Cookie]] = {}

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[Cookie]:
        return iter(self._all.values())

    def values(self) -> Iterable[Cookie]:
        return self._all.values()

    def get(self, key: tuple[str, str, str]) -> Cookie | None:
        return self._all.get(key)

    def __setitem__(self, key: tuple[str, str, str], cookie: Cookie) -> None:
        """``jar[cookie.key] = cookie`` (the key is the cookie's own)."""
        self.set(cookie)

    def set(self, cookie: Cookie, now: float | None = None) -> None:
        """Keep ``cookie``, replacing one of the same key; an expired cookie (at
        ``now``) only removes it, as a site deletes a cookie."""
        self.discard(cookie.key)
        if now is not None and cookie.expires and cookie.expires < now:
            return
        domain = self._by_domain.setdefault(cookie.domain, {})
        if self.per_domain is not None and len(domain) >= self.per_domain:
            if now is not None:
                for old in [c for c in domain.values() if c.expires and c.expires < now]:
                    self.discard(old.key)
            while len(domain) >= self.per_domain:
                self.discard(next(iter(domain)))
        if self.total is not None:
            while len(self._all) >= self.total:
                self.discard(next(iter(self._all)))
        domain = self._by_domain.setdefault(cookie.domain, {})
        domain[cookie.key] = cookie
        self._all[cookie.key] = cookie

    def discard(self, key: tuple[str, str, str]) -> None:
        if self._all.pop(key, None) is None:
            return
        domain = self._by_domain[key[0]]
        del domain[key]
        if not domain:
            del self._by_domain[key[0]]

    def candidates(self, host: str) -> Iterator[Cookie]:
        """The cookies whose domain ``host`` could match: the host's own, and those of
        its parent domains (none for an IP address)."""
        names = [host] if is_ip(host) else _parents(host)
        for name in names:
            yield from self._by_domain.get(name, {}).values()

    def matching(self, scheme: str, host: str, path: str, now: float) -> list[Cookie]:
        return [c for c in self.candidates(host) if c.matches(scheme, host, path, now)]


def _parents(host: str) -> list[str]:
    labels = host.split(".")
    return [".".join(labels[i:]) for i in range(len(labels))]
