"""The fetch run's SIGINT and SIGTERM: the first stops it cleanly and is told at once;
the process's own handlers are back when the run ends (crawlkit/stages/fetch.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import serve_routes

from crawlkit.stages.fetch import fetch_records

PAGE = ("text/html", b"<html><body>a page</body></html>")


@pytest.fixture
def site() -> Iterator[str]:
    with serve_routes({f"/p{i}": PAGE for i in range(20)}) as (root, _log):
        yield root


@pytest.fixture
def own_handlers() -> Iterator[list[int]]:
    """SIGINT and SIGTERM handled by a handler that only counts, as a crawl's are while
    its fetch runs come and go; the test's handlers are put back after."""
    got: list[int] = []

    def record(signum: int, _frame: Any) -> None:
        got.append(signum)

    before = {sig: signal.signal(sig, record) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield got
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_the_handlers_in_place_before_a_fetch_run_are_back_after_it(
    tmp_path: Path, site: str, own_handlers: list[int]
) -> None:
    # The loop's own handler stayed installed after the loop closed and took the
    # signals that came next: a crawl worker lost its parent's stop there and waited
    # for work for good.
    heard: list[str] = []
    urls = [{"url": f"{site}/p{i}"} for i in range(3)]
    out: list[dict] = []
    fetch_records(
        urls, out.append, state_dir=tmp_path, allow_net=["127.0.0.0/8"], on_interrupt=heard.append
    )
    assert [r["outcome"] for r in out] == ["fetched"] * 3
    os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGINT)
    assert own_handlers == [signal.SIGTERM, signal.SIGINT] and heard == []


def test_a_signal_during_a_fetch_run_is_told_at_once_and_defers_the_rest(
    tmp_path: Path, site: str, own_handlers: list[int]
) -> None:
    heard: list[str] = []
    out: list[dict] = []

    def sink(record: dict) -> None:
        out.append(record)
        if len(out) == 1:
            os.kill(os.getpid(), signal.SIGTERM)
            assert heard == ["SIGTERM"]  # told before the loop runs again

    urls = [{"url": f"{site}/p{i}"} for i in range(20)]
    fetch_records(
        urls,
        sink,
        state_dir=tmp_path,
        allow_net=["127.0.0.0/8"],
        on_interrupt=heard.append,
    )
    assert heard == ["SIGTERM"] and own_handlers == []
    # one host and the default gap between its requests: most were still to come
    assert len(out) == 20 and "deferred" in {r["outcome"] for r in out}
    # the next signal would act as Python's defaults: the crawl then stops at once
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) == signal.default_int_handler
