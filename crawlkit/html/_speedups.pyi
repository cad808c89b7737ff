"""Type stub of the C extension crawlkit/html/_speedups.c (see its comment)."""

import builtins
from collections.abc import Callable

from crawlkit.url import ParsedURL

class Core:
    bytes: int
    max_bytes: int
    max_entries: int
    def __init__(
        self,
        cache: dict[tuple[str, str], ParsedURL | None],
        authorities: dict[str, tuple[str, str] | None],
        parse: Callable[[str, str], ParsedURL | None],
        query_part: Callable[[str], str],
        host_site: Callable[[str], tuple[str, str] | None],
        fingerprint: Callable[[builtins.bytes], str],
        parsed_type: type[ParsedURL],
        max_entries: int,
        max_bytes: int,
    ) -> None: ...
    def resolve(self, href: str, base: str, authority: str, /) -> ParsedURL | None: ...

def requisite_markers(data: builtins.bytes, /) -> tuple[bool, bool]: ...
