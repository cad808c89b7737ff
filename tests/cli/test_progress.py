"""The crawl's progress line on a terminal (issue 15 item 15)."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator

import pytest
from crawlkit_cli.progress import StatusLine, crawl_status, progress_printer

from crawlkit.diag import Reporter

INFO = {
    "cycle": "000007",
    "fetched": 1234,
    "pages_per_s": 5.25,
    "new_urls": 9876,
    "deferred": 3,
    "errors": 2,
    "elapsed_s": 61.4,
}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _visible(raw: str) -> list[str]:
    """What a terminal shows: each erase (\\r ESC[K) clears the current line."""
    lines = [""]
    for i, part in enumerate(raw.split("\r\033[K")):
        if i:
            lines[-1] = ""
        chunks = part.split("\n")
        lines[-1] += chunks[0]
        lines.extend(chunks[1:])
    return lines


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[Terminal]:
    # Set in the test's own phase: pytest's capture sets sys.stderr again after setup.
    term = Terminal()
    monkeypatch.setenv("COLUMNS", "60")
    saved = sys.stderr
    yield term
    sys.stderr = saved


def _attach(term: Terminal) -> None:
    sys.stderr = term


def test_something_is_shown_at_once(terminal: Terminal) -> None:
    _attach(terminal)
    show = progress_printer()
    assert show is not None
    assert "starting" in _visible(terminal.getvalue())[-1]


def test_the_line_fits_the_terminal_width(terminal: Terminal) -> None:
    _attach(terminal)
    show = progress_printer()
    show(INFO)
    last = _visible(terminal.getvalue())[-1]
    assert len(crawl_status(INFO)) > 60
    assert len(last) < 60
    assert last.startswith("cycle 000007: 1234 fetched (5.2/s)")
    assert last.endswith("…")


def test_a_warning_is_never_glued_onto_the_line(terminal: Terminal) -> None:
    _attach(terminal)
    show = progress_printer()
    show(INFO)
    Reporter("crawlkit crawl").warn("robots.txt of a.example: 503; retrying later")
    shown = _visible(terminal.getvalue())
    assert shown[-2] == "crawlkit crawl: robots.txt of a.example: 503; retrying later"
    assert shown[-1].startswith("cycle 000007")  # drawn again below the warning
    sys.stderr.write("\n")  # the command ends the line: the last status stays
    assert _visible(terminal.getvalue())[-2].startswith("cycle 000007")


def test_no_progress_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress_printer() is None
    assert not isinstance(sys.stderr, StatusLine)
