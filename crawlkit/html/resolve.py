"""Resolving and canonicalizing a page's hrefs, with a cache (:class:`LinkResolver`).

The work is done by a core: :class:`PyCore` here, or the same in C
(``crawlkit/html/_speedups.c``, built where the install has a C compiler), which gives
the same results and leaves the same cache entries at about half the CPU.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from crawlkit.errors import InvalidURL
from crawlkit.url import FINGERPRINT_OF_BYTES, Canonicalizer, ParsedURL

try:
    from crawlkit.html import _speedups as _compiled
except ImportError:  # built without a C compiler: PyCore does it all
    _compiled = None  # type: ignore[assignment]

__all__ = ["RESOLVE_CACHE_BYTES", "LinkResolver", "PyCore"]

# The cache's size bound (estimated bytes; each extract process has its own cache).
RESOLVE_CACHE_BYTES = 48 * 1024 * 1024
# An entry's bytes besides its strings (dict slot, key tuple, ParsedURL with host, site
# and fp), measured with tracemalloc at ~525 B an entry of short URLs (~150 B of text).
_ENTRY_BYTES = 400

# A path that every rule level leaves as it is: unreserved characters and "/" only
# (no "%", ";", "?", "\\", spaces), and no segment that starts with a dot.
_CLEAN = re.compile(r"[A-Za-z0-9\-._~/]*")
# A host name with a letter in its last label (a last label of digits makes WHATWG read
# an IPv4 address), or a dotted-quad IPv4 address as WHATWG writes it; then a port.
# Either way _host_site still checks the authority is canonical.
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_NAME = r"(?:[a-z0-9-]+\.)*[a-z0-9-]*[a-z-][a-z0-9-]*"
_CLEAN_HOST = re.compile(rf"(?:{_NAME}|(?:{_OCTET}\.){{3}}{_OCTET})(?::[0-9]{{1,5}})?")


# A query that every rule level reads as it is but for which parameters it keeps and
# their order (Canonicalizer.query_part): unreserved characters, "=", "&" and "+" (no
# "%", nothing the WHATWG parser escapes).
_CLEAN_QUERY = re.compile(r"[A-Za-z0-9\-._~=&+]*")
# A reference that starts with a scheme ("mailto:", "javascript:", "http:x").
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
# The first character of a relative-path reference this module keys by the base's
# directory (LinkResolver._directory_key): not "/", "?", "#", a space, a control or "\\".
_PATH_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~%")


def _clean_path(path: str) -> bool:
    return _CLEAN.fullmatch(path) is not None and "/." not in "/" + path


def _relative_path(href: str) -> bool:
    """Whether ``href`` is a relative-path reference as the URL parser reads it: its
    result depends on the base's directory (scheme, authority and path up to its last
    "/") and on nothing else of the base."""
    return (
        href[:1] in _PATH_START
        and "\t" not in href
        and "\n" not in href
        and "\r" not in href
        and _SCHEME.match(href) is None
    )


def _climb(directory: str, path: str, root: int) -> tuple[str, str]:
    """``path``'s leading "./" and "../" segments (and a last "." or "..") applied to
    ``directory`` (a URL ending in "/", whose path starts at ``root``), as the URL
    parser applies them: ".." never climbs above the root."""
    while path.startswith("."):
        if path.startswith("./") or path == ".":
            path = path[2:]
        elif path.startswith("../") or path == "..":
            path = path[3:]
            if len(directory) > root + 1:
                directory = directory[: directory.rfind("/", 0, -1) + 1]
        else:
            break
    return directory, path


class LinkResolver:
    """Resolves and canonicalizes hrefs, with a bounded cache of results.

    Navigation links repeat on every page of a site, so results are cached under a
    key that holds exactly what the result depends on: the href alone for an
    absolute http(s) URL, the base's scheme and authority for ``/path`` and
    ``//host`` references, the base's directory for a relative path (``b.html``,
    ``../a/``: pages of one directory share them), the whole base otherwise. A
    fragment alone (``#top``) is the base itself.

    Most of the rest are plain paths (``/a/b.html``, ``b.html``, ``../b.html``,
    ``//host/a``, ``https://host/a``) made only of unreserved characters, with or
    without a plain query (``/item?id=1&lang=en``): for those the canonical URL is the
    base's authority (or directory) plus the path, and the query as the rule level
    makes it (:meth:`Canonicalizer.query_part`), so they are joined here without a
    full parse. Everything else goes through :meth:`Canonicalizer.parse`; a test
    checks that both ways agree.

    ``resolve(href, base, authority)`` is the canonical http(s) URL of ``href`` on a
    page at ``base`` (a WHATWG serialization; ``authority`` is its
    ``scheme://userinfo@host:port`` part), or None. It is the core's own method
    (:class:`PyCore`, or its C twin unless ``compiled`` is false).
    """

    resolve: Callable[[str, str, str], ParsedURL | None]

    def __init__(
        self,
        canon: Canonicalizer,
        max_entries: int = 200_000,
        max_bytes: int = RESOLVE_CACHE_BYTES,
        *,
        compiled: bool = True,
    ):
        self._canon = canon
        self._cache: dict[tuple[str, str], ParsedURL | None] = {}
        self._authorities: dict[str, tuple[str, str] | None] = {}
        # Bounded by size, not by luck: URLs may be kilobytes long. Estimated bytes of
        # the entries (see PyCore.resolve); past max_bytes (or max_entries) all is
        # cleared, which costs less per lookup than an LRU and refills with the pages
        # at hand.
        core = _compiled.Core if compiled and _compiled is not None else PyCore
        self._core = core(
            self._cache,
            self._authorities,
            self._parse,
            canon.query_part,
            self._host_site,
            FINGERPRINT_OF_BYTES,
            ParsedURL,
            max_entries,
            max_bytes,
        )
        self.resolve = self._core.resolve

    @property
    def compiled(self) -> bool:
        """Whether the C core resolves."""
        return not isinstance(self._core, PyCore)

    @property
    def bytes(self) -> int:
        """Estimated bytes of the cached entries."""
        return self._core.bytes

    @property
    def max_bytes(self) -> int:
        return self._core.max_bytes

    def _parse(self, href: str, base: str) -> ParsedURL | None:
        try:
            return self._canon.parse(href, base)
        except InvalidURL:
            return None

    def _host_site(self, authority: str) -> tuple[str, str] | None:
        """(host, site) when ``authority`` is already in canonical form, else None
        (kept in the authorities dict, which the core reads first)."""
        try:
            return self._authorities[authority]
        except KeyError:
            pass
        info: tuple[str, str] | None = None
        try:
            parsed = self._canon.parse(authority + "/")
            if parsed.url == authority + "/":
                info = (parsed.host, parsed.site)
        except InvalidURL:
            pass
        self._authorities[authority] = info
        return info


class PyCore:
    """:class:`LinkResolver`'s work: the cache key, the cache and the plain-path
    shortcut (the class docstring there), over dicts and functions it is handed
    (the C core, ``_speedups.Core``, takes the same and does the same)."""

    def __init__(
        self,
        cache: dict[tuple[str, str], ParsedURL | None],
        authorities: dict[str, tuple[str, str] | None],
        parse: Callable[[str, str], ParsedURL | None],
        query_part: Callable[[str], str],
        host_site: Callable[[str], tuple[str, str] | None],
        fingerprint: Callable[[bytes], str],
        parsed_type: type[ParsedURL],
        max_entries: int,
        max_bytes: int,
    ):
        self._cache = cache
        self._authorities = authorities
        self._parse = parse
        self._query_part = query_part
        self._host_site = host_site
        self._fingerprint = fingerprint
        self._parsed_type = parsed_type
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        # The last base's directory key (a page's links share one base).
        self._key_base = ""
        self._key_dir = ""

    def resolve(self, href: str, base: str, authority: str) -> ParsedURL | None:
        """:class:`LinkResolver`'s ``resolve``."""
        if href.startswith("#"):
            # A fragment only names the base, and no rule level keeps fragments.
            href = base.partition("#")[0]
        if href.startswith(("http://", "https://")) and "\t" not in href and "\n" not in href:
            key = ("", href)
        elif href.startswith("//"):
            key = (authority.partition(":")[0], href)
        elif href.startswith("/"):
            key = (authority, href)
        elif _relative_path(href):
            key = (self._directory_key(base, authority), href)
        else:
            key = (base, href)
        try:
            return self._cache[key]
        except KeyError:
            pass
        parsed = self._fast(href, base, authority)
        if parsed is None:
            parsed = self._parse(href, base)
        cost = _ENTRY_BYTES + 2 * (len(key[0]) + len(href)) + (len(parsed.url) if parsed else 0)
        if len(self._cache) >= self.max_entries or self.bytes + cost > self.max_bytes:
            self._cache.clear()
            self._authorities.clear()
            self.bytes = 0
        self._cache[key] = parsed
        self.bytes += cost
        return parsed

    def _directory_key(self, base: str, authority: str) -> str:
        """The base up to the last "/" of its path (before its query and fragment):
        all a relative path's result depends on; the whole base if that is shorter
        than the authority and a "/" (not a WHATWG serialization of an http URL)."""
        if base != self._key_base:
            head = base.partition("?")[0].partition("#")[0]
            slash = head.rfind("/")
            self._key_base = base
            self._key_dir = head[: slash + 1] if slash >= len(authority) else base
        return self._key_dir

    def _directory(self, base: str, authority: str) -> str | None:
        """The base's directory (:meth:`_directory_key`) when its path is clean: a
        relative path is joined to it as it is (the base's last segment, query and
        fragment play no part)."""
        key = self._directory_key(base, authority)
        path = key[len(authority) :]
        return key if path.startswith("/") and _clean_path(path) else None

    def _fast(self, href: str, base: str, authority: str) -> ParsedURL | None:
        """The plain-path cases (see :class:`LinkResolver`); None means "parse it"."""
        path = href.split("#", 1)[0] if "#" in href else href
        query = ""
        if "?" in path:
            path, _, raw_query = path.partition("?")
            if not _CLEAN_QUERY.fullmatch(raw_query):
                return None
            query = self._query_part(raw_query)
        if path.startswith("//"):
            # scheme-relative ("//host/path"): the base's scheme, then as absolute
            scheme, colon, _ = authority.partition(":")
            if not colon:
                return None
            path = scheme + ":" + path
        if path.startswith("/"):
            if not base.startswith(authority + "/") or not _clean_path(path):
                return None
            info = self._host_site(authority)
            url = authority + path
        elif path.startswith(("http://", "https://")):
            slash = path.find("/", path.index("//") + 2)
            if slash < 0:
                return None
            auth = path[:slash]
            if not _CLEAN_HOST.fullmatch(auth[auth.index("//") + 2 :]) or not _clean_path(
                path[slash:]
            ):
                return None
            info = self._host_site(auth)
            url = path
        else:
            # _CLEAN has no ":", so a reference with a scheme fails it here.
            directory = self._directory(base, authority) if path else None
            if directory is None:
                return None
            if path.startswith("."):
                directory, path = _climb(directory, path, len(authority))
            if path and not _clean_path(path):
                return None
            info = self._host_site(authority)
            url = directory + path
        if info is None:
            return None
        url += query
        return self._parsed_type(url, info[0], info[1], self._fingerprint(url.encode()))
