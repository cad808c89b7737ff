"""Write the recrawl history of this directory with the crawlkit on PYTHONPATH.

``recrawl/history.sqlite`` was written by the crawlkit before change-rate estimates
(commit 1e5e1a1, history version 1), so tests can check that this version opens and
migrates it:

    git archive 1e5e1a1 crawlkit | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old python tests/data/recrawl-v1/make.py tests/data/recrawl-v1
"""

from __future__ import annotations

import sys
from pathlib import Path

from crawlkit.stages.recrawl import recrawl

T0 = 1_780_000_000.0
H = 3600.0


def main(out: Path) -> None:
    # a.test/fast changes at every visit, a.test/still never; b.test/new fetched once.
    for step in range(8):
        at = T0 + step * 6 * H
        records = [
            {
                "url": "https://a.test/fast",
                "outcome": "fetched",
                "status": 200,
                "fetched_at": at,
                "digest": f"sha1:{step}",
                "etag": f'"f{step}"',
            },
            {
                "url": "https://a.test/still",
                "outcome": "fetched",
                "status": 200,
                "fetched_at": at,
                "digest": "sha1:same",
            },
        ]
        if step == 7:
            records.append(
                {
                    "url": "https://b.test/new",
                    "outcome": "fetched",
                    "status": 200,
                    "fetched_at": at,
                    "digest": "sha1:n",
                }
            )
        lines = [("make", i + 1, r) for i, r in enumerate(records)]
        recrawl(out, lines, write=lambda _r: None, now=at)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
