"""The loop in one place: the steps that run are the steps ``--explain`` prints."""

from __future__ import annotations

from pathlib import Path

from conftest import crawlkit, start_testweb

from crawlkit.crawl import Crawl
from crawlkit.crawl.steps import POST_STEPS, STEPS


def test_explain_is_rendered_from_the_steps_that_run() -> None:
    res = crawlkit("crawl", "--state", "S", "--explain", "--per-host", "3", "--no-budgets")
    assert res.code == 0, res.stderr
    comments = [line[2:] for line in res.lines[1:] if line.startswith("# ")]
    commands = [line for line in res.lines if not line.startswith("#")]
    assert comments == [step.what for step in STEPS]
    assert len(commands) == sum(len(step.commands) for step in STEPS)
    assert "--per-host 3 --no-budgets" in commands[0]
    # every step after the fetch is a method of the crawl, run by its marker
    assert all(callable(getattr(Crawl, f"_step_{s.marker}", None)) for s in POST_STEPS)


def test_each_cycle_goes_through_every_step_in_the_list(tmp_path: Path) -> None:
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "8", "--special", "none") as web:
        state = tmp_path / "state"
        res = crawlkit("crawl", str(web.seeds), "--state", str(state), "--scope", "any",
                       "--min-delay", "0.05s", "--allow-net", web.info["allow_net"],
                       "--hosts-file", str(web.hosts_file), timeout=120)  # fmt: skip
        assert res.code == 0, res.stderr
    cycles = sorted(p for p in (state / "crawl" / "cycles").iterdir() if p.is_dir())
    assert cycles
    expected = {"fetch.done", "cycle.done", *(f"{s.marker}.done" for s in POST_STEPS)}
    for cycle in cycles:
        # (the links step also marks "seen" between seen-merge and frontier add)
        assert {p.name for p in cycle.glob("*.done")} - {"seen.done"} == expected, cycle.name
