"""The special host kinds of the test web: names, default counts and one-line help.

``KINDS`` is what ``--special`` chooses from (:func:`parse_specials`) and what
:func:`crawlkit.testweb.graph.build_web` lays out as hosts; the behaviour of each kind
is in its family's module, reached through :mod:`crawlkit.testweb.specials`, which
graph must not import (the handlers build on graph's ``Host`` and ``Web``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crawlkit.errors import UsageError
from crawlkit.testweb import tls

__all__ = ["KINDS", "Kind", "parse_specials"]


@dataclass(frozen=True, slots=True)
class Kind:
    """A special behaviour: its hosts' kinds, default count and one-line help."""

    name: str
    help: str
    host_kinds: tuple[str, ...] = ()
    default: int = 1
    shared_address: bool = False
    size: int = 0
    in_all: bool = True  # part of "all" (the default); False: only when named

    @property
    def hosts(self) -> tuple[str, ...]:
        return self.host_kinds or (self.name,)


def _k(name: str, help: str, **kw: Any) -> Kind:
    kind = Kind(name, help, **kw)
    if not kind.host_kinds:
        kind = Kind(name, help, (name,), kind.default, kind.shared_address, kind.size, kind.in_all)
    return kind


KINDS: dict[str, Kind] = {
    k.name: k
    for k in [
        _k("robots-rules", "robots.txt with agent groups, Allow/Disallow, * and $, Crawl-delay"),
        _k("robots-404", "robots.txt answers 404 (no rules: crawl everything)"),
        _k("robots-503", "robots.txt answers 503 (disallow everything, retry later)"),
        _k("robots-redirect", "robots.txt reached through a 3-hop redirect chain"),
        _k("robots-big", "a 600 KiB robots.txt (one rule past 500 KiB)"),
        _k("slow", "every response waits --slow-delay before the status line"),
        _k("status-429", "429 with Retry-After in seconds, now and then"),
        _k("status-503", "503 with Retry-After as an HTTP-date, now and then"),
        _k("calendar", "an endless calendar (next/previous month forever)"),
        _k("session-trap", "session ids in every link (?sid= and in the path)"),
        _k("duplicates", "the same bytes under many URLs"),
        _k("near-duplicates", "pages that differ only by a timestamp and an ad"),
        _k("redirects", "redirect chains (5 and 9 hops), loops, relative and cross-host"),
        _k("gzip-bomb", "64 MiB of zeros in a 64 KiB gzip body"),
        _k("huge", "a 64 MiB body and an endless chunked body"),
        _k("slow-drip", "bodies that drip a few bytes a second, or stall"),
        _k("malformed", "broken HTML, broken chunking, dropped connections, garbage"),
        _k("types", "PDF, PNG, JSON, text, XML, octet-stream, mislabelled HTML"),
        _k("sitemaps", "Sitemap lines in robots.txt, an index, gzipped and txt sitemaps"),
        _k("conditional", "ETag only, Last-Modified only, both, weak ETag: correct 304s"),
        _k("changing", "a page that changes every --change-every seconds"),
        _k(
            "private",
            "a host on the simulated private network, and a gateway to it",
            host_kinds=("private", "gateway"),
        ),
        _k(
            "link-farm",
            "sites that only link to each other, endlessly (one address)",
            default=3,
            shared_address=True,
        ),
        _k("ipv6", "a host on ::1 only (AAAA-only; crawl with --allow-net ::1/128)", default=0),
        # Only with --tls (default 0, so 'all' leaves them out): see tls.py.
        *(_k(name, f"{help} (with --tls)", default=0) for name, (_, help) in tls.TLS_KINDS.items()),
        _k(
            "requisites",
            "pages with every page requisite kind, and an assets site they borrow from "
            "(not in all)",
            host_kinds=("requisites", "assets"),
            in_all=False,
        ),
    ]
}


def parse_specials(text: str | None) -> dict[str, int]:
    """``--special`` value → {kind: count}.

    ``all`` (the default) or ``none``, then comma-separated items: ``kind`` or
    ``kind:N`` adds, ``-kind`` removes. ``none,slow:2`` gives two slow hosts only.
    """
    result: dict[str, int] = {}
    items = [s.strip() for s in (text or "all").split(",") if s.strip()]
    if not items or items[0] not in ("all", "none"):
        items = ["none", *items] if not all(i.startswith("-") for i in items) else ["all", *items]
    for item in items:
        if item == "all":
            result = {k.name: k.default for k in KINDS.values() if k.in_all}
        elif item == "none":
            result = {}
        elif item.startswith("-"):
            if item[1:] not in KINDS:
                raise UsageError(f"unknown special kind {item[1:]!r} (see --help)")
            result.pop(item[1:], None)
        else:
            name, _, count = item.partition(":")
            if name not in KINDS:
                raise UsageError(f"unknown special kind {name!r} (known: {', '.join(KINDS)})")
            try:
                n = int(count) if count else KINDS[name].default or 1
            except ValueError:
                raise UsageError(f"bad count in --special item {item!r}") from None
            if n < 0:
                raise UsageError(f"bad count in --special item {item!r}")
            result[name] = n
    return {k: v for k, v in result.items() if v > 0}
