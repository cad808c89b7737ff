"""The WARC records a fetch log points to: ``crawlkit extract --fetch-log``.

A fetch record names where its response is stored (``warc``: the file's name, offset
and length) and, for a copy of a payload first captured at another URL (stored as a
revisit), where that first capture is (``warc.refers_to``). Read this way, extract
takes exactly the responses of a fetch run, from files still being written too, and
parses each copy of a page or stylesheet from its first capture against its own URL,
as ``crawlkit crawl`` does a cycle (a WARC file read alone passes revisits over: it
does not say where their bodies are).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from crawlkit.diag import Reporter
from crawlkit.records import Record
from crawlkit.warc.places import find_warc

__all__ = ["FetchLogSources", "fetch_log_sources"]


@dataclass
class FetchLogSources:
    """What extract reads for a fetch log: each file's record ranges in log order,
    the first captures of copies by payload digest, and the files not found."""

    ranges: list[tuple[str, list[tuple[int, int]]]] = field(default_factory=list)
    originals: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def fetch_log_sources(
    records: Iterable[tuple[str, int, Record]], warc_dir: Path, reporter: Reporter
) -> FetchLogSources:
    """The sources of the fetch records ``records`` (``(source, line, record)``, as
    :func:`crawlkit.streams.read_records_with_lines` gives them) whose WARC files are
    in ``warc_dir`` (as the fetch wrote them: ``new/``, still ``.open``, or moved up);
    a file not found is reported once and its records left out, and a record whose
    offset or length is no count is reported with its line and skipped."""
    spans: dict[str, list[tuple[int, int]]] = {}
    found: dict[str, Path | None] = {}
    out = FetchLogSources()

    def where(name: str) -> Path | None:
        if name not in found:
            found[name] = find_warc(warc_dir, name)
            if found[name] is None:
                out.missing.append(name)
                reporter.warn(f"{warc_dir}: no WARC file {name}", "damaged WARC")
        return found[name]

    for source, line, rec in records:
        warc = rec.get("warc")
        if not isinstance(warc, dict) or not warc.get("file"):
            continue  # no response stored: refused, deferred, an error
        span = _span(warc)
        if span is None:
            reporter.bad_record(source, line, "warc offset and length are not counts")
            continue
        name = Path(str(warc["file"])).name
        if where(name) is None:
            continue
        spans.setdefault(name, []).append(span)
        first, digest = warc.get("refers_to"), rec.get("digest")
        if isinstance(first, dict) and first.get("file") and digest:
            first_span = _span(first)
            path = where(Path(str(first["file"])).name) if first_span is not None else None
            if path is not None and first_span is not None:
                out.originals[str(digest)] = (str(path), *first_span)
    out.ranges = [(str(found[name]), ranges) for name, ranges in spans.items()]
    return out


def _span(warc: dict) -> tuple[int, int] | None:
    """``(offset, length)`` of a WARC location: a count and a positive count, or None."""
    offset, length = warc.get("offset"), warc.get("length")
    if type(offset) is not int or type(length) is not int or offset < 0 or length <= 0:
        return None
    return offset, length
