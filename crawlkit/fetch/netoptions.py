"""How the fetcher reaches servers: whom it trusts (TLS) and who names them (DNS).

One small typed record, so ``crawlkit fetch`` and ``crawlkit crawl`` hand the same
choices to :func:`crawlkit.stages.fetch.fetch_records` without a growing list of
keyword arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["NetOptions"]


@dataclass(frozen=True)
class NetOptions:
    """``ca_file``: CAs trusted besides the system store. ``insecure``: fetch anyway
    when a TLS check fails, and mark the record. ``dns_server``: ``ADDR:PORT`` of a DNS
    server to ask instead of the system resolver (None: the system's)."""

    ca_file: Path | None = None
    insecure: bool = False
    dns_server: str | None = None

    def flags(self) -> str:
        """The same choices as fetch options (`` --ca-file F --insecure ...``, or "")."""
        out = ""
        if self.ca_file is not None:
            out += f" --ca-file {self.ca_file}"
        if self.insecure:
            out += " --insecure"
        if self.dns_server is not None:
            out += f" --dns-server {self.dns_server}"
        return out
