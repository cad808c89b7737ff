"""URL patterns: ``--exclude``, ``--ignore-file`` and a ``--scope`` regex, in one place.

Every regular expression a user gives crawlkit is searched in URLs that strangers
write, so pattern work must be bounded whatever the URL (docs/design.md invariant 8):

* Patterns are compiled with RE2 (``google-re2``), whose matching time is linear in
  the URL's length. Python's :mod:`re` backtracks: ``^(.*?/){3,}.*\\.(jpg|png)$`` on a
  URL of 8,000 characters ran for minutes and held the crawl past two SIGTERMs. A
  pattern RE2 cannot run in linear time (backreferences such as ``\\1``, lookaround
  such as ``(?=...)``, ``\\Z``, a repeat count over 1,000) is a usage error that
  says so, never a silent switch to a backtracking engine. RE2's ``\\d``, ``\\w``,
  ``\\s`` and ``\\b`` are ASCII-only; URLs in canonical form are ASCII anyway.
* A URL longer than :data:`MAX_URL_LENGTH` characters (2,000 by default) is refused
  (``"refused": "url-length"``) before any pattern runs on it: :func:`too_long` is
  asked first by :class:`Excludes`, by ``seen-merge`` and by the scope.

:class:`Excludes` holds ``--exclude`` patterns and a live ignore file (one pattern a
line, ``#`` comments and blank lines skipped), searched in the canonical URL. The
file is read again whenever its modification time or size changes; a file that has
become unreadable or holds a bad pattern keeps the patterns read before (one warning
per change), so a typo in a live edit never stops a crawl. At start the same
problems are usage errors. ``seen-merge``, ``frontier add``, ``frontier next`` and
``crawl`` take the same two options and refuse alike (``"refused": "excluded"`` with
a ``detail`` naming the pattern and where it came from).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import re2

try:  # RE2::Set: every pattern in one pass; google-re2 exposes it only here
    from re2 import _re2
except ImportError:  # pragma: no cover - an older or repackaged google-re2
    _re2 = None

from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import UsageError
from crawlkit.records import Record, Refusal, refusal

__all__ = [
    "MAX_URL_LENGTH",
    "Excludes",
    "Pattern",
    "PatternSet",
    "compile_pattern",
    "read_ignore_file",
    "too_long",
]

#: URLs longer than this (characters) are refused before any pattern runs on them
#: (docs/design.md "Numbers": URL length 2,000).
MAX_URL_LENGTH = 2000


def too_long(url: str, limit: int = MAX_URL_LENGTH) -> str | None:
    """The ``detail`` of a ``url-length`` refusal when ``url`` is over ``limit``, else None."""
    if len(url) > limit:
        return f"{len(url)} characters > {limit}"
    return None


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own copy of the error on stderr
    return options


def _set_of(texts: list[str]) -> Any:
    """An RE2 set of ``texts`` (already checked by :func:`compile_pattern`), or None
    when this google-re2 has no sets."""
    if _re2 is None:
        return None
    try:
        options = _re2.RE2.Options()
        options.log_errors = False
        found = _re2.Set(_re2.RE2.Anchor.UNANCHORED, options)
        if all(found.Add(text.encode("utf-8")) == n for n, text in enumerate(texts)):
            return found if found.Compile() else None
    except (AttributeError, TypeError, ValueError):  # pragma: no cover
        pass
    return None  # pragma: no cover


class Pattern:
    """One compiled pattern: ``text`` as the user wrote it, searched in linear time."""

    __slots__ = ("_one", "_regex", "text")

    def __init__(self, text: str, regex: Any):
        self.text = text
        self._regex = regex
        self._one = _set_of([text])  # faster to ask than the regex (see PatternSet)

    def search(self, url: str) -> bool:
        """True if the pattern is found anywhere in ``url`` (time linear in its length)."""
        if self._one is not None:
            return bool(self._one.Match(url.encode("utf-8", "surrogatepass")))
        return self._regex.search(url) is not None

    def __repr__(self) -> str:
        return f"Pattern({self.text!r})"


def compile_pattern(pattern: str, where: str) -> Pattern:
    """``pattern`` compiled for linear-time search, or :class:`UsageError` naming
    ``where`` it came from (a flag, or ``FILE:LINE``)."""
    try:
        return Pattern(pattern, re2.compile(pattern, _options()))
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        if isinstance(why, bytes):
            why = why.decode("utf-8", "replace")
        raise UsageError(
            f"{where}: bad regular expression {pattern!r}: {why} (patterns run in linear "
            "time with RE2 syntax: no backreferences or lookaround)"
        ) from exc


class PatternSet:
    """Patterns searched together: :meth:`first` says which one matches first (by its
    place in the list), in one pass over the URL.

    One RE2 search through google-re2's Python API costs about 5 µs whatever the
    pattern (the call, not the matching, dominates), so a crawl with a few excludes
    would pay that per pattern per link; an RE2 set pays it once per URL. When the
    set cannot be built the patterns are searched one by one, with the same answer.
    """

    def __init__(self, patterns: Iterable[Pattern]):
        self.patterns = list(patterns)
        self._set = _set_of([p.text for p in self.patterns]) if self.patterns else None

    def first(self, url: str) -> int | None:
        """The index of the first pattern found in ``url``, or None."""
        if not self.patterns:
            return None
        if self._set is not None:
            hits = self._set.Match(url.encode("utf-8", "surrogatepass"))
            return min(hits) if hits else None
        for n, pattern in enumerate(self.patterns):
            if pattern.search(url):
                return n
        return None


def read_ignore_file(path: Path) -> list[Pattern]:
    """The patterns of an ignore file; :class:`UsageError` names the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--ignore-file {path}: cannot read it ({exc})") from exc
    out: list[Pattern] = []
    for number, line in enumerate(text.splitlines(), 1):
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        out.append(compile_pattern(pattern, f"{path}:{number}"))
    return out


class Excludes:
    """``--exclude`` patterns and the live ignore file (see the module docstring).

    Falsy when it has neither, so callers skip it at no cost.
    """

    def __init__(
        self,
        patterns: Iterable[str] = (),
        ignore_file: Path | None = None,
        *,
        reporter: Reporter | None = None,
        max_url_length: int = MAX_URL_LENGTH,
    ):
        self.fixed = [compile_pattern(p, "--exclude") for p in patterns]
        self.ignore_file = ignore_file
        self.max_url_length = max_url_length
        self.rep = reporter or NullReporter()
        self._from_file: list[Pattern] = []
        self._stamp: tuple[int, int] | None = None
        if ignore_file is not None:
            self._from_file = read_ignore_file(ignore_file)
            self._stamp = self._file_stamp()
        self._all = PatternSet([*self.fixed, *self._from_file])
        self.version = 0  # one more each time the ignore file's patterns are read again

    def _file_stamp(self) -> tuple[int, int] | None:
        assert self.ignore_file is not None
        try:
            st = self.ignore_file.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def changed(self) -> bool:
        """Whether the ignore file changed since it was last read (a stat, no read)."""
        return self.ignore_file is not None and self._file_stamp() != self._stamp

    def refresh(self) -> None:
        """Read the ignore file again if it changed since the last read."""
        if self.ignore_file is None:
            return
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            self._from_file = read_ignore_file(self.ignore_file)
        except UsageError as exc:
            self.rep.warn(f"{exc}; the patterns read before stay in force", "ignore file")
            return
        self._all = PatternSet([*self.fixed, *self._from_file])
        self.version += 1
        self.rep.info(f"{self.ignore_file}: {len(self._from_file)} patterns in force")

    def match(self, url: str) -> str | None:
        """The detail of the first pattern that matches ``url``, or None.

        Call :meth:`refusal` for URLs of unknown length: this runs the patterns on
        ``url`` as it is (each in linear time).
        """
        n = self._all.first(url)
        if n is None:
            return None
        if n < len(self.fixed):
            return f"--exclude {self.fixed[n].text}"
        return f"{self.ignore_file}: {self._from_file[n - len(self.fixed)].text}"

    def refusal(self, rec: Mapping[str, Any]) -> Refusal | None:
        """``rec`` refused (``url-length`` before any pattern, else ``excluded``), or
        None when it may pass. A record without a URL (a site record) passes."""
        url = rec.get("url")
        if not isinstance(url, str):
            return None
        length = too_long(url, self.max_url_length)
        if length is not None:
            return refusal(rec, "url-length", length)
        detail = self.match(url)
        return refusal(rec, "excluded", detail) if detail is not None else None

    def sort(self, records: Iterable[Record], refused: list[Refusal]) -> Iterator[Record]:
        """The records that pass; the refused ones are appended to ``refused``. The
        ignore file is read again first if it changed."""
        self.refresh()
        for rec in records:
            out = self.refusal(rec)
            if out is None:
                yield rec
            else:
                refused.append(out)

    def __bool__(self) -> bool:
        return bool(self.fixed) or self.ignore_file is not None
