"""For an A/B only: put this folder on PYTHONPATH and ``crawlkit crawl`` runs as one
process, as it did when issue 27 was filed: extract in a thread of the crawl process
(no CPU deadline per page: a timer would signal the whole crawl), the dedup and recrawl
steps in its post thread (the path a crawl takes when its step process has died). The
same code otherwise; the figure issue 27's floor compares ``crawl`` with.

    bench/bench_crawl.py --tools crawlkit-b,crawlkit --b-env PYTHONPATH=bench/one_process
"""

import concurrent.futures as cf
from typing import Any

from crawlkit.crawl import step_process
from crawlkit.stages import extract, extract_page


def _in_this_process(options: extract_page.ExtractOptions) -> None:
    extract_page.set_process_rules(options.rules)
    extract_page._worker = options.parser()
    extract_page._want_requisites = options.requisites


def _thread_executor(jobs: int, options: extract_page.ExtractOptions, fork: bool = True) -> Any:
    return cf.ThreadPoolExecutor(
        max_workers=jobs, initializer=_in_this_process, initargs=(options,)
    )


def _no_step_process(self: step_process.StepProcess, step: Any, *args: Any) -> None:
    return None


# What is patched must be there: a rename in crawlkit would otherwise leave the crawl
# as it is, silently measuring the wrong thing.
if not callable(getattr(extract, "executor", None)) or not callable(
    getattr(step_process.StepProcess, "_start", None)
):
    raise ImportError("bench/one_process: crawlkit no longer has what this patches")
extract.executor = _thread_executor  # ExtractWorkers' pool (crawl -j N)
step_process.StepProcess._start = _no_step_process  # type: ignore[method-assign]
