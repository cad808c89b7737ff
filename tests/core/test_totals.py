"""The totals of a crawl's runs: requests of killed runs counted from their journals."""

from __future__ import annotations

import json
from pathlib import Path

from crawlkit.crawl.summary import CrawlSummary, save_totals
from crawlkit.totals import RequestJournal, read_totals


def test_killed_runs_count_once_and_a_clock_set_back_loses_none(tmp_path: Path) -> None:
    """A killed run's journal counts in the totals until a run that ends folds it in;
    a run after a clock was set back (its time behind the last journal counted) still
    names its journal after it, or its requests were taken as counted already."""
    ahead = f"requests-{4_000_000_000_000_000_000:020d}.journal"  # a clock far ahead
    (tmp_path / "totals.json").write_text(
        json.dumps({"requests": 10, "runs": 1, "last_journal": ahead})
    )
    killed = RequestJournal(tmp_path)
    for _ in range(3):
        killed.count()
    killed.close()  # (as a kill -9 leaves it: written, never folded)
    assert killed.name > ahead
    assert read_totals(tmp_path)["requests"] == 13 and read_totals(tmp_path)["runs"] == 2
    ending = RequestJournal(tmp_path)
    ending.count()
    summary = CrawlSummary()
    summary.requests = 1
    save_totals(tmp_path / "totals.json", summary, 0, ending)
    totals = read_totals(tmp_path)
    assert (totals["requests"], totals["runs"]) == (14, 3)
    assert not list(tmp_path.glob("requests-*.journal"))  # folded, then deleted
