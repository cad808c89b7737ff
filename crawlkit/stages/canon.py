"""``crawlkit canon``: URLs, one a line, to canonical URLs or URL records.

Streams: one output line per input line, in order, so outputs stay aligned with
inputs (``paste urls.txt <(crawlkit canon urls.txt)``). Memory is constant.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InvalidURL
from crawlkit.io import Record
from crawlkit.url import Canonicalizer


def canon_records(
    lines: Iterable[tuple[str, int, str | None]],
    canon: Canonicalizer,
    *,
    base: str | None = None,
    reporter: Reporter | None = None,
) -> Iterator[Record]:
    """One ``{"input", "url", "host", "site", "fp", "error"}`` record per input line.

    ``url`` is None and ``error`` says why when the line cannot be used; such lines are
    also reported (with their line number) and counted as bad records.
    """
    reporter = reporter or NullReporter()
    for source, lineno, text in lines:
        if text is None:
            yield {"input": None, "url": None, "host": None, "site": None, "fp": None,
                   "error": "invalid UTF-8"}  # fmt: skip
            continue
        raw = text.strip()
        try:
            if not raw:
                raise InvalidURL("empty line")
            parsed = canon.parse(raw, base)
        except InvalidURL as exc:
            reporter.bad_record(source, lineno, str(exc))
            yield {"input": text, "url": None, "host": None, "site": None, "fp": None,
                   "error": str(exc)}  # fmt: skip
            continue
        yield {"input": text, "url": parsed.url, "host": parsed.host, "site": parsed.site,
               "fp": parsed.fp, "error": None}  # fmt: skip
