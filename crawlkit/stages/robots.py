"""``crawlkit robots check``: URLs against a robots.txt, one verdict a line.

The parser and matcher are :mod:`crawlkit.robots`; this stage is the record-level
loop around them (``robots parse`` only shows a parse, so it has no stage function).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from crawlkit import streams
from crawlkit.diag import NullReporter, Reporter
from crawlkit.robots import MAX_ROBOTS_BYTES, RobotsTxt

__all__ = ["check_lines", "read_robots"]

# An absolute URL starts with its scheme (RFC 3986 3.1) and "//" (the authority).
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
NOT_A_URL = "not an absolute URL or a path starting with /"


def _checkable(url: str) -> bool:
    """Is ``url`` what a verdict can be given for: an absolute URL, a path starting
    with ``/``, or ``""`` (the path ``/``)?

    Anything else has no path of its own: ``example.com/private`` (a host without its
    scheme) would be matched as the path ``/example.com/private`` and allowed where
    ``/private`` is forbidden, so it is answered with an error instead.
    """
    return not url or url.startswith("/") or _ABSOLUTE.match(url) is not None


def read_robots(path: str) -> bytes:
    """The first 512 KiB (plus one byte, so a cut line is noticed) of a robots.txt."""
    with contextlib.closing(streams.open_input(path)) as stream:
        return stream.read(MAX_ROBOTS_BYTES + 1)


def check_lines(
    robots: RobotsTxt,
    agent: str,
    lines: Iterable[tuple[str, int, Any]],
    reporter: Reporter | None = None,
    *,
    skip_blank: bool = True,
) -> Iterator[dict[str, Any]]:
    """One ``{"url", "allowed", "rule"}`` record per non-blank input line, in order
    (per line, blank ones too, without ``skip_blank``: URLs given as arguments, where
    ``""`` is the empty path, checked as ``/`` is).

    ``lines`` are ``(source, line_number, text)`` as from
    :func:`crawlkit.streams.read_text_lines` (``aligned=True``). A line is a URL, or a JSON
    object with a
    ``"url"`` (a URL record from another stage): then the output is that record with
    ``"allowed"`` and ``"rule"`` added, every other field passed through. A line that
    is neither (not UTF-8, over the line cap, a broken object, an object without a
    string ``url``) gives
    ``{"url": null, "allowed": false, "rule": null, "error": ...}`` and is reported, so
    every input line is answered (docs/design.md invariant 1). A URL that is neither
    absolute nor a path starting with ``/`` (``example.com/x``) is reported and answered
    ``"allowed": false, "rule": null`` with an ``"error"``, its URL (or record) kept.
    Streams; constant memory.
    """
    reporter = reporter if reporter is not None else NullReporter()
    for source, lineno, text in lines:
        record: dict[str, Any] | None = None
        error = None
        if not isinstance(text, str):  # None or an streams.LineError: reported by the reader
            error = getattr(text, "reason", "invalid UTF-8")
        url = text.strip() if isinstance(text, str) else ""
        if url.startswith("{"):
            try:
                record = orjson.loads(url)
            except orjson.JSONDecodeError:
                record = None
            if isinstance(record, dict) and isinstance(record.get("url"), str):
                url = record["url"]
            else:
                record, error = None, 'not a JSON object with a "url"'
                reporter.bad_record(source, lineno, error)
        if error is not None:
            yield {"url": None, "allowed": False, "rule": None, "error": error}
            continue
        if not url and skip_blank:
            continue
        if not _checkable(url):
            reporter.bad_record(source, lineno, f"{NOT_A_URL}: {url[:200]!r}")
            answer = {"allowed": False, "rule": None, "error": NOT_A_URL}
            yield {"url": url, **answer} if record is None else {**record, **answer}
            continue
        verdict = robots.check(agent, url)
        if record is None:
            yield {"url": url, "allowed": verdict.allowed, "rule": verdict.rule}
        else:
            record["allowed"] = verdict.allowed
            record["rule"] = verdict.rule
            yield record
