"""Extract workers that die as a parser can, for the tests of the recovery.

Kept apart from the test modules: a worker started from a fork server imports the
module its function lives in, and this one imports nothing the server has not.
"""

from __future__ import annotations

import os
import signal

from crawlkit.stages.extract_page import ChunkResult, Job, process_chunk


def past_deadline_on_slow(chunk: list[Job]) -> ChunkResult:
    """Runs out of its CPU deadline (SIGPROF, as the kernel's timer sends it) on any
    page whose URL says ``slow``."""
    if any("slow" in job[0] for job in chunk):
        os.kill(os.getpid(), signal.SIGPROF)
    return process_chunk(chunk)
