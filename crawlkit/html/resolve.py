"""Resolving and canonicalizing a page's hrefs, with a cache (:class:`LinkResolver`)."""

from __future__ import annotations

import re

from crawlkit.errors import InvalidURL
from crawlkit.url import Canonicalizer, ParsedURL, fingerprint

__all__ = ["RESOLVE_CACHE_BYTES", "LinkResolver"]

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


def _clean_path(path: str) -> bool:
    return _CLEAN.fullmatch(path) is not None and "/." not in "/" + path


class LinkResolver:
    """Resolves and canonicalizes hrefs, with a bounded cache of results.

    Navigation links repeat on every page of a site, so results are cached under a
    key that holds exactly what the result depends on: the href alone for an
    absolute http(s) URL, the base's scheme and authority for ``/path`` and
    ``//host`` references, the whole base otherwise.

    Most of the rest are plain paths (``/a/b.html``, ``b.html``, ``//host/a``,
    ``https://host/a``) made only of unreserved characters: for those the canonical
    URL is the base's authority (or directory) plus the path, at every rule level, so
    they are joined here without a full parse. Everything else goes through
    :meth:`Canonicalizer.parse`; a test checks that both ways agree.
    """

    def __init__(
        self,
        canon: Canonicalizer,
        max_entries: int = 200_000,
        max_bytes: int = RESOLVE_CACHE_BYTES,
    ):
        self._canon = canon
        self._cache: dict[tuple[str, str], ParsedURL | None] = {}
        self._authorities: dict[str, tuple[str, str] | None] = {}
        self._dirs: dict[str, str | None] = {}
        self._max = max_entries
        # Bounded by size, not by luck: URLs may be kilobytes long. Estimated bytes of
        # the entries (see _cost); past max_bytes (or max_entries) all is cleared, which
        # costs less per lookup than an LRU and refills with the pages at hand.
        self.max_bytes = max_bytes
        self.bytes = 0

    def resolve(self, href: str, base: str, authority: str) -> ParsedURL | None:
        """The canonical http(s) URL of ``href`` on a page at ``base``, or None.

        ``base`` is a WHATWG serialization and ``authority`` its
        ``scheme://userinfo@host:port`` part.
        """
        if href.startswith(("http://", "https://")) and "\t" not in href and "\n" not in href:
            key = ("", href)
        elif href.startswith("//"):
            key = (authority.partition(":")[0], href)
        elif href.startswith("/"):
            key = (authority, href)
        else:
            key = (base, href)
        try:
            return self._cache[key]
        except KeyError:
            pass
        parsed = self._fast(href, base, authority)
        if parsed is None:
            try:
                parsed = self._canon.parse(href, base)
            except InvalidURL:
                parsed = None
        cost = _ENTRY_BYTES + 2 * (len(key[0]) + len(href)) + (len(parsed.url) if parsed else 0)
        if len(self._cache) >= self._max or self.bytes + cost > self.max_bytes:
            self._cache.clear()
            self._authorities.clear()
            self._dirs.clear()
            self.bytes = 0
        self._cache[key] = parsed
        self.bytes += cost
        return parsed

    def _host_site(self, authority: str) -> tuple[str, str] | None:
        """(host, site) when ``authority`` is already in canonical form, else None."""
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

    def _directory(self, base: str, authority: str) -> str | None:
        """The base URL up to the last "/" of its path, if that path is clean."""
        try:
            return self._dirs[base]
        except KeyError:
            pass
        path = base[len(authority) :].split("?", 1)[0].split("#", 1)[0]
        found = authority + path[: path.rfind("/") + 1] if _clean_path(path) else None
        self._dirs[base] = found
        return found

    def _fast(self, href: str, base: str, authority: str) -> ParsedURL | None:
        """The plain-path cases (see the class docstring); None means "parse it"."""
        path = href.split("#", 1)[0] if "#" in href else href
        if path.startswith("//"):
            # scheme-relative ("//host/path"): the base's scheme, then as absolute
            scheme, colon, _ = authority.partition(":")
            if not colon:
                return None
            path = scheme + ":" + path
        # _CLEAN has no ":", so absolute URLs fail it here and are checked below.
        if (not path or not _clean_path(path)) and not path.startswith(("http://", "https://")):
            return None
        if path.startswith("/"):
            if not base.startswith(authority + "/"):
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
            directory = self._directory(base, authority)
            if directory is None:
                return None
            info = self._host_site(authority)
            url = directory + path
        if info is None:
            return None
        return ParsedURL(url, info[0], info[1], fingerprint(url))
