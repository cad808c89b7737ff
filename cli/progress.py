"""The one-line progress report of a long command on a terminal (``crawlkit crawl``).

The line is redrawn in place (carriage return, erase line) and shares stderr with
the command's warnings, so three rules keep it readable:

* it is shown at once ("starting"), not only when the first cycle ends;
* it is cut to the terminal's width (asked again at every redraw, so a resized window
  is followed), since a line that wraps can no longer be erased in place;
* anything else written to stderr first erases it, then it is drawn again below, so
  a warning never starts in the middle of the progress line.

Nothing of this happens when stderr is not a terminal (a log file gets no progress
lines at all).
"""

from __future__ import annotations

import shutil
import sys
from typing import Any, TextIO

_ERASE = "\r\033[K"


class StatusLine:
    """A line kept at the bottom of a terminal stream, below everything else written.

    :meth:`install` puts it in front of ``sys.stderr``; every write through
    ``sys.stderr`` then goes through :meth:`write`, which moves the status line out of
    the way first.
    """

    def __init__(self, stream: TextIO):
        self._stream = stream
        self._text = ""  # the status as last set, before fitting
        self._shown = False
        self._redraw = False  # erased for another line; draw again when it ends

    # -- the stream interface, for sys.stderr ---------------------------------------
    def write(self, text: str) -> int:
        if self._shown:
            if text == "\n":  # the owner ends the line: keep the last status visible
                self._shown = False
                self._text = ""
                return self._stream.write(text)
            self._stream.write(_ERASE)
            self._shown = False
            self._redraw = True
        n = self._stream.write(text)
        # print() writes a message and its newline separately: draw again only once
        # the other line is complete.
        if self._redraw and text.endswith("\n"):
            self._redraw = False
            self._draw()
        return n

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def __getattr__(self, name: str) -> Any:  # fileno, encoding, buffer, ...
        return getattr(self._stream, name)

    # -- the status -------------------------------------------------------------------
    def set(self, text: str) -> None:
        """Show ``text`` as the status (in place of the one shown)."""
        self._text = text
        self._draw()

    def _draw(self) -> None:
        if not self._text:
            return
        width = shutil.get_terminal_size(fallback=(80, 24)).columns
        # One column less than the width: a line that fills the last column makes some
        # terminals wrap, and the erase then leaves the first part behind.
        line = self._text if len(self._text) < width else self._text[: max(width - 2, 1)] + "…"
        self._stream.write(_ERASE + line)
        self._stream.flush()
        self._shown = True

    @classmethod
    def install(cls) -> StatusLine:
        """A status line on the real stderr, put in front of ``sys.stderr``."""
        current = sys.stderr
        if isinstance(current, StatusLine):
            return current
        line = cls(current)
        sys.stderr = line
        return line


def crawl_status(info: dict[str, Any]) -> str:
    """The progress line of one crawl cycle (keys as ``Crawl._progress_info`` gives)."""
    return (
        f"cycle {info['cycle']}: {info['fetched']} fetched ({info['pages_per_s']:.1f}/s), "
        f"{info['new_urls']} new URLs, {info['deferred']} deferred, {info['errors']} errors, "
        f"{info['elapsed_s']:.0f} s"
    )


def progress_printer() -> Any:
    """A per-cycle progress callback for ``crawl``, or None when stderr is no terminal.

    Shows "starting" at once; the first cycle can take seconds (robots.txt, the first
    fetches, parsing).
    """
    if not sys.stderr.isatty():
        return None
    line = StatusLine.install()
    line.set("crawl starting: seeds, robots.txt, first fetches ...")

    def show(info: dict[str, Any]) -> None:
        line.set(crawl_status(info))

    return show
