"""bench/one_process: the floor's baseline of issue 27 is the same crawl as one process.

The benchmark puts the folder on PYTHONPATH; its sitecustomize must patch what the crawl
really uses, or the "one process" column would silently measure the usual crawl.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import concurrent.futures as cf, threading
from pathlib import Path
from crawlkit.crawl.step_process import StepProcess
from crawlkit.stages import extract, extract_page

pool = extract.ExtractWorkers(1)
pool.submit([])  # starts the pool as a crawl's first cycle does
assert isinstance(pool._pool, cf.ThreadPoolExecutor), type(pool._pool)
parser = pool._pool.submit(extract_page.worker_extractor).result()
assert parser is not None, "the worker thread has no parser"
pool.close()
steps = StepProcess(Path("dedup"), Path("recrawl"))
assert steps.start_dedup(Path("cycle")) is None and steps._pool is None
print("one process")
"""


def test_one_process_runs_extract_and_steps_in_the_crawl_process(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "bench" / "one_process")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "one process"


def test_without_it_extract_runs_in_a_process_of_its_own(tmp_path: Path) -> None:
    # The probe fails without the folder: so it can tell the two apart.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "ProcessPoolExecutor" in done.stderr
