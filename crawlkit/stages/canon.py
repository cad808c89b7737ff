"""``crawlkit canon``: URLs, one a line, to canonical URLs or URL records.

A line that is a JSON object (another stage's URL record) counts as its ``"url"``.

Streams: one output line per input line, in order, so outputs stay aligned with
inputs (``paste urls.txt <(crawlkit canon urls.txt)``). Memory is constant.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import orjson

from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InvalidURL
from crawlkit.records import CanonRecord, canon_record
from crawlkit.streams import LineError
from crawlkit.url import Canonicalizer, trim_url


def canon_records(
    lines: Iterable[tuple[str, int, str | LineError | None]],
    canon: Canonicalizer,
    *,
    base: str | None = None,
    reporter: Reporter | None = None,
) -> Iterator[CanonRecord]:
    """One ``{"input", "url", "host", "site", "fp", "error"}`` record per input line.

    ``url`` is None and ``error`` says why when the line cannot be used; such lines are
    also reported (with their line number) and counted as bad records. ``lines`` are
    as :func:`crawlkit.streams.read_text_lines` yields them with ``aligned=True``: a line
    it could not read (None or a :class:`LineError`: not UTF-8, over the line cap)
    still gets its record, so outputs stay aligned with inputs. With ``base``, an
    empty (or all-blank) line is the empty reference, which the WHATWG URL Standard
    resolves to the base itself (without its fragment); without one it is an error.
    """
    reporter = reporter or NullReporter()
    for source, lineno, text in lines:
        if not isinstance(text, str):
            error = text.reason if isinstance(text, LineError) else "invalid UTF-8"
            yield canon_record(None, None, error)
            continue
        raw = trim_url(text)
        try:
            if not raw and base is None:
                raise InvalidURL("empty line")
            if raw.startswith("{"):  # a URL record of another stage: its "url"
                # (with --base, a line that is no JSON object is a relative reference)
                url = _url_of_record(raw, strict=base is None)
                if url is not None:
                    raw = text = url
            parsed = canon.parse(raw, base)
        except InvalidURL as exc:
            reporter.bad_record(source, lineno, str(exc))
            yield canon_record(text, None, str(exc))
            continue
        yield canon_record(text, parsed)


def _url_of_record(line: str, strict: bool) -> str | None:
    """The "url" of a JSON record line; for a line that is no JSON, an error when
    ``strict``, else None (the line is a URL reference such as ``{id}/x``)."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if not strict:
            return None
        raise InvalidURL(f"a line starting with '{{' is not JSON ({exc})") from None
    url = record.get("url") if isinstance(record, dict) else None
    if not isinstance(url, str):
        raise InvalidURL('a JSON record without a "url" string')
    return url
