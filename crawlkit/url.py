"""The URL layer: canonical form, registered domain (site) and fingerprint.

Every stage that sees a URL goes through :class:`Canonicalizer`, so two spellings of
one resource get one fingerprint everywhere. Three rule levels:

``none``
    Parse and resolve by the WHATWG URL Standard (what a browser would request, via
    ada-url), drop the fragment, nothing else.
``safe``
    Also what never changes meaning: lowercase scheme and host, no default port, dot
    segments resolved, empty path as ``/``, IDN as punycode (all done by the WHATWG
    parser), percent-escapes in uppercase and unreserved characters decoded.
``default``
    ``safe`` plus: tracking parameters and session ids removed (a data file users can
    extend), the ``;jsessionid=`` path parameter removed, query parameters sorted by key
    (stable for equal keys) and an empty query dropped. ``www.`` and trailing slashes
    are left as they are: they can name different resources.

Only http and https URLs are accepted. Each level is idempotent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import ada_url
import xxhash
from ada_url.ada_adapter import ffi as _FFI
from ada_url.ada_adapter import lib as _ADA

from crawlkit.errors import InvalidURL

__all__ = [
    "IF_TOKEN",
    "Canonicalizer",
    "ParsedURL",
    "Rules",
    "fingerprint",
    "fingerprint_int",
    "is_public_suffix",
    "load_param_denylist",
    "looks_like_session_token",
    "read_denylist",
    "set_process_rules",
    "site_of_host",
    "site_of_record",
    "site_of_url",
    "trim_url",
    "whatwg_href",
]


class Rules(StrEnum):
    NONE = "none"
    SAFE = "safe"
    DEFAULT = "default"


class ParsedURL(NamedTuple):
    """A canonical URL with the fields every URL record carries."""

    url: str
    host: str  # hostname[:port], the unit of politeness and of robots.txt
    site: str  # registered domain by the Public Suffix List, or the IP / bare host
    fp: str  # xxh3_64 of the canonical URL, 16 lowercase hex digits


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})?")
# What a URL parser strips from both ends of a URL: C0 controls and space. Not what
# str.strip() takes (Unicode's white space too): "/a\u00a0" is a URL of its own.
URL_SPACE = "".join(map(chr, range(0x21)))


def trim_url(text: str) -> str:
    """``text`` without the C0 controls and spaces around it (the WHATWG URL parser's
    first step; a no-break space or U+3000 is part of the URL)."""
    return text.strip(URL_SPACE)


# The parameter only: "/list;jsessionid=A1;page=2" keeps ";page=2" (a page of its own).
_JSESSIONID = re.compile(r";jsessionid=[^/?#;]*", re.IGNORECASE)
# A denylist name written ``name=token`` counts only when its value looks like a
# session token (:func:`looks_like_session_token`): ``sid=1`` is a story id on many
# sites, ``sid=9f2c4e1a...`` a session (Heritrix strips sid= only with 32 of them).
IF_TOKEN = "=token"
_SESSION_TOKEN = re.compile(
    r"[A-Za-z0-9]{16,}|(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{8,}"
)


def looks_like_session_token(value: str) -> bool:
    """16 or more letters or digits, or 8 or more with both in it: a generated id, not
    a page's number, word or slug."""
    return _SESSION_TOKEN.fullmatch(value) is not None


def _pct_repl(match: re.Match[str]) -> str:
    digits = match.group(1)
    if digits is None:
        # A stray "%" becomes "%25": left alone, "%%41" would turn into "%A" and then,
        # on the next pass, into the escape "%A..." (canon would not be idempotent).
        return "%25"
    code = int(digits, 16)
    return chr(code) if code in _UNRESERVED else "%" + digits.upper()


def normalize_percent(text: str) -> str:
    """Uppercase percent-escapes, decode those of unreserved characters (RFC 3986), and
    escape a "%" that starts no escape as "%25"."""
    return _PCT.sub(_pct_repl, text) if "%" in text else text


#: A URL fingerprint of the URL's UTF-8 bytes (:func:`fingerprint`).
FINGERPRINT_OF_BYTES = xxhash.xxh3_64_hexdigest


def fingerprint(url: str) -> str:
    """The 64-bit xxh3 of a canonical URL as 16 lowercase hex digits."""
    return FINGERPRINT_OF_BYTES(url.encode("utf-8"))


def fingerprint_int(url: str) -> int:
    return xxhash.xxh3_64_intdigest(url.encode("utf-8"))


class SuffixList:
    """Public Suffix List lookups: the registered domain of a host name.

    Rules come from the offline copy of the PSL shipped by the ``publicsuffixlist``
    package (ICANN and private sections), converted to punycode once, so a lookup is a
    few set probes from the right-hand label (about 1 µs against ~7 µs for the
    package's own lookup; the test suite checks that both agree).
    """

    def __init__(self, text: str):
        self.exact: set[str] = set()
        self.wildcard: set[str] = set()  # "*.ck" stored as "ck"
        self.exception: set[str] = set()  # "!www.ck" stored as "www.ck"
        for line in text.splitlines():
            rule = line.strip()
            if not rule or rule.startswith("//"):
                continue
            rule = rule.split()[0]
            target = self.exact
            if rule.startswith("!"):
                target, rule = self.exception, rule[1:]
            elif rule.startswith("*."):
                target, rule = self.wildcard, rule[2:]
            if not rule.isascii():
                try:  # idna_to_ascii returns bytes, b"" for a name it refuses
                    rule = ada_url.idna_to_ascii(rule).decode("ascii")
                except Exception:  # a rule the IDNA codec refuses cannot match a parsed host
                    continue
                if not rule:
                    continue
            target.add(rule.lower())

    def public_suffix_length(self, labels: list[str]) -> int:
        """How many right-hand labels form the public suffix (at least 1: rule "*")."""
        length = 1
        suffix = ""
        for n in range(1, len(labels) + 1):
            label = labels[-n]
            parent = suffix
            suffix = label + "." + suffix if suffix else label
            if suffix in self.exception:
                return n - 1
            if suffix in self.exact or (parent and parent in self.wildcard):
                length = n
        return length

    def registered_domain(self, hostname: str) -> str | None:
        labels = hostname.split(".")
        length = self.public_suffix_length(labels)
        if len(labels) <= length:
            return None
        return ".".join(labels[-(length + 1) :])


@lru_cache(maxsize=1)
def _suffix_list() -> SuffixList:
    import publicsuffixlist

    path = Path(publicsuffixlist.__file__).parent / "public_suffix_list.dat"
    return SuffixList(path.read_text("utf-8"))


# A crawl sees each host many times; 2**18 names cost about 40 MB at most.
@lru_cache(maxsize=1 << 18)
def site_of_host(hostname: str) -> str:
    """Registered domain of a host by the PSL (private section included).

    An IP address, a public suffix itself, or a single label (``localhost``) is its own
    site. A trailing dot (``example.com.``) is ignored.
    """
    name = hostname.rstrip(".").lower()
    if not name:
        return hostname
    if name.startswith("[") or name.replace(".", "").isdigit():
        return name
    return _suffix_list().registered_domain(name) or name


def is_public_suffix(hostname: str) -> bool:
    """Whether a host name is itself a public suffix by the PSL (``co.uk``,
    ``github.io``, and any single label such as ``test``, by the rule ``*``)."""
    name = hostname.rstrip(".").lower()
    labels = name.split(".")
    return bool(name) and _suffix_list().public_suffix_length(labels) >= len(labels)


def site_of_url(url: Any) -> str | None:
    """The registered domain of a URL's host, cheaply (no full parse)."""
    if type(url) is not str:
        return None
    parts = url.split("/", 3)  # ["https:", "", "user@host:port", "path..."]
    if len(parts) < 3 or parts[1] or not parts[0].endswith(":"):
        return None
    host = parts[2]
    if "?" in host or "#" in host:
        host = host.split("?", 1)[0].split("#", 1)[0]
    if "@" in host:
        host = host.rpartition("@")[2]
    if host.startswith("["):
        host = host[: host.index("]") + 1] if "]" in host else host  # [::1]:8080
    elif ":" in host:
        host = host.partition(":")[0]
    return site_of_host(host.lower()) if host else None


def site_of_record(record: Mapping[str, Any], canon: Canonicalizer | None = None) -> str:
    """The site of a record: its ``site`` field, else the registered domain of its
    ``url`` (parsed by ``canon``, or read cheaply with :func:`site_of_url` without one).

    The one home of this rule for every stage (shard routing, fetch and frontier
    ownership, dedup's per-site counts). Raises :class:`InvalidURL` when neither
    gives a site.
    """
    site = record.get("site")
    if isinstance(site, str) and site:
        return site
    url = record.get("url")
    if not isinstance(url, str):
        raise InvalidURL("record has neither 'site' nor 'url'")
    if canon is not None:
        return canon.parse(url).site
    found = site_of_url(url)
    if not found:
        raise InvalidURL(f"no host in {url[:200]!r}")
    return found


def read_denylist(lines: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Parse name lists: ``#`` comments, one name a line (case-insensitive), and
    ``name*`` for a prefix. Returns (exact names, prefixes)."""
    exact: set[str] = set()
    prefixes: list[str] = []
    for raw in lines:
        name = raw.split("#", 1)[0].strip().lower()
        if not name:
            continue
        if name.endswith("*"):
            prefixes.append(name[:-1])
        else:
            exact.add(name)
    return frozenset(exact), tuple(prefixes)


def load_param_denylist(
    extra_files: Iterable[str | Path] = (),
) -> tuple[frozenset[str], tuple[str, ...]]:
    """The shipped denylist plus the users' files (same format)."""
    text = (Path(__file__).parent / "data" / "param-denylist.txt").read_text("utf-8")
    lines = text.splitlines()
    for path in extra_files:
        lines.extend(Path(path).read_text("utf-8").splitlines())
    return read_denylist(lines)


# The rule level of a Canonicalizer made without one: Rules.DEFAULT, unless this
# process runs a crawl that names another (crawl --rules; an archive's is safe). The
# crawl's modules make their own canonicalizers (the frontier's, the fetcher's for
# redirects, the sitemap reader's): one setting for the process keeps every URL of the
# crawl under the same rules, where one left at the default renamed the others' URLs.
_process_rules: list[Rules] = [Rules.DEFAULT]


def set_process_rules(rules: Rules | str) -> None:
    """The rule level of every :class:`Canonicalizer` this process makes without one."""
    _process_rules[0] = Rules(rules)


class Canonicalizer:
    """Turns URL text into :class:`ParsedURL` under one rule level (by default the
    process's: :func:`set_process_rules`).

    ``canonicalize`` raises :class:`InvalidURL` (and only that) for input that cannot be
    used: unparsable, not http(s), or without a host.
    """

    def __init__(
        self,
        rules: Rules | str | None = None,
        *,
        param_denylist: tuple[frozenset[str], tuple[str, ...]] | None = None,
    ):
        self.rules = Rules(rules) if rules is not None else _process_rules[0]
        exact, prefixes = param_denylist if param_denylist is not None else load_param_denylist()
        self._deny_exact = frozenset(n for n in exact if not n.endswith(IF_TOKEN))
        self._deny_prefixes = prefixes
        # names dropped only with a value that looks like a session token ("sid=token")
        self._deny_tokens = frozenset(n[: -len(IF_TOKEN)] for n in exact if n.endswith(IF_TOKEN))

    def canonicalize(self, url: str, base: str | None = None) -> str:
        return self.parse(url, base).url

    def parse(self, url: str, base: str | None = None) -> ParsedURL:
        parsed = self._parse_once(url, base)
        if parsed is None:
            raise InvalidURL(f"not a usable URL: {url[:200]!r}")
        return parsed

    def _serialize(self, url: str, base: str | None) -> str:
        """The WHATWG serialization of ``url`` (resolved against ``base``)."""
        try:
            return whatwg_href(url, base)
        except Exception as exc:  # ada raises ValueError; odd text (surrogates) others
            raise InvalidURL(f"cannot parse URL {url[:200]!r}") from exc

    def _parse_once(self, url: str, base: str | None) -> ParsedURL | None:
        href = self._serialize(url, base)
        # A WHATWG serialization is regular enough to split by hand, which is several
        # times faster than asking the parser for each component: after "scheme://"
        # the authority runs to the first "/", "@" and "/" are escaped in userinfo,
        # and "?" and "#" are escaped in the path.
        if href.startswith("http://"):
            start = 7
        elif href.startswith("https://"):
            start = 8
        else:
            scheme = href.split(":", 1)[0]
            raise InvalidURL(f"scheme {scheme!r} is not http or https: {url[:200]!r}")
        slash = href.find("/", start)
        if slash < 0:  # cannot happen for special schemes; be safe anyway
            href += "/"
            slash = len(href) - 1
        host = href[start:slash].rpartition("@")[2]
        hostname = host[: host.index("]") + 1] if host.startswith("[") else host.partition(":")[0]
        if not hostname:
            raise InvalidURL(f"URL without a host: {url[:200]!r}")
        if self.rules is Rules.DEFAULT and hostname.endswith(".") and hostname.strip("."):
            # "www.example.org." is the DNS name "www.example.org" written absolute: one
            # server (which reads the Host without the dot), so one URL, one politeness
            # queue and one robots.txt. Kept apart, a page linking both spellings had the
            # server asked by two hosts' clocks at once. (Safe rules keep the URL as
            # linked, for replay; browsers keep the dot, as a separate origin.)
            bare = hostname.rstrip(".")
            userinfo, at, _ = href[start:slash].rpartition("@")
            host = bare + host[len(hostname) :]
            href = href[:start] + userinfo + at + host + href[slash:]
            slash = start + len(userinfo + at + host)
            hostname = bare
        if "#" in href:
            href = href[: href.index("#")]
        if self.rules is not Rules.NONE:
            href = self._normalize(href, slash)
        return ParsedURL(href, host, site_of_host(hostname), fingerprint(href))

    def _normalize(self, href: str, path_start: int) -> str:
        prefix = href[:path_start]
        path, has_query, query = href[path_start:].partition("?")
        path = normalize_percent(path)
        tail = self.query_part(query) if has_query else ""
        if self.rules is Rules.DEFAULT and ";" in path:
            stripped = _JSESSIONID.sub("", path) or "/"
            if stripped != path:
                # Removing a path parameter can leave a dot segment ("/.;jsessionid=1/")
                # that the parser would resolve: run the rules once more so the result
                # is a fixed point.
                return self.canonicalize(prefix + stripped + tail)
        return prefix + path + tail

    def query_part(self, query: str) -> str:
        """What this rule level makes of a WHATWG-serialized URL's query (the text
        after its "?"): "?" and the query, or "" when the default rules leave none."""
        if self.rules is Rules.NONE:
            return "?" + query
        query = normalize_percent(query) if query else ""
        if self.rules is Rules.DEFAULT:
            query = self._clean_query(query)
            return "?" + query if query else ""
        return "?" + query

    def _clean_query(self, query: str) -> str:
        if not query:
            return ""
        kept: list[tuple[str, str]] = []
        deny_exact = self._deny_exact
        deny_prefixes = self._deny_prefixes
        deny_tokens = self._deny_tokens
        for piece in query.split("&"):
            if not piece:
                continue
            key, _, value = piece.partition("=")
            lowered = key.lower()
            if lowered in deny_exact or (deny_prefixes and lowered.startswith(deny_prefixes)):
                continue
            if lowered in deny_tokens and looks_like_session_token(value):
                continue
            kept.append((key, piece))
        if len(kept) > 1:
            kept.sort(key=_first)
        return "&".join([piece for _, piece in kept])


def _first(pair: tuple[str, str]) -> str:
    return pair[0]


def whatwg_href(url: str, base: str | None = None) -> str:
    """The WHATWG serialization of ``url``, resolved against ``base`` when one is given
    (what ``ada_url.normalize_url`` and ``ada_url.join_url`` return); raises
    ``ValueError`` for text that is no URL (``UnicodeEncodeError`` for lone surrogates).

    It calls the C functions those wrap directly: they build a dictionary or register a
    finaliser per call, which makes them about twice as slow, and a URL pipeline makes
    this call for nearly every link (1.5 against 2.6 µs a join here).
    """
    data = url.encode("utf-8")
    if base:
        base_data = base.encode("utf-8")
        handle = _ADA.ada_parse_with_base(data, len(data), base_data, len(base_data))
    else:
        handle = _ADA.ada_parse(data, len(data))
    try:
        if not _ADA.ada_is_valid(handle):
            raise ValueError("Invalid URL")
        href = _ADA.ada_get_href(handle)
        return _FFI.buffer(href.data, href.length)[:].decode("utf-8")
    finally:
        _ADA.ada_free(handle)
