"""Write the frontier state of this directory with the crawlkit on PYTHONPATH.

``frontier/`` and ``expected.json`` were written by the crawlkit before the site table
had a journal (commit 55716ae), so tests can check that this version opens an older
state as that version saw it:

    git archive 55716ae crawlkit | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old python tests/data/frontier-v1/make.py /tmp/out
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import orjson

from crawlkit.frontier.store import Frontier, NextOptions
from crawlkit.url import fingerprint

NOW = 1_780_000_000.0


def main(out: Path) -> None:
    frontier = Frontier.open(out / "frontier")
    recs = []
    for i in range(40):
        site = f"site{i % 6}.test"
        host = f"www.{site}"
        url = f"http://{host}/p{i}"
        recs.append(
            {
                "url": url,
                "host": host,
                "site": site,
                "fp": fingerprint(url),
                "depth": 1,
                "reason": "seed" if i < 2 else "link",
                "from": f"http://www.site{(i + 1) % 6}.test/",
            }
        )
    for i in range(3):
        url = f"http://www.site0.test/old{i}"
        recs.append({"url": url, "reason": "recrawl", "due": "2026-01-01T00:00:00Z"})
    frontier.add_records(recs, now=NOW, on_refused=lambda r: None)
    site_record = {"site": "site1.test", "pages": 10, "yield": 0.5}
    frontier.add_records([site_record], now=NOW, on_refused=lambda r: None)
    frontier.commit()
    batch = frontier.next(NextOptions(max_urls=12, per_host=3, now=NOW))
    frontier.commit()
    reread = Frontier.open(out / "frontier", read_only=True)
    stats = reread.stats()
    rest = []
    for queue in [*reread.queues.values(), *reread.parked.values()]:
        rest += [orjson.loads(line)["url"] for line in queue.take(len(queue))]
    expected = {
        "sites": reread.sites.to_json(),
        "hosts": dict(reread.hosts),
        "stats": stats,
        "handed": [orjson.loads(line)["url"] for line in batch.lines],
        "queued_urls": sorted(rest),
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
