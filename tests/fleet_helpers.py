"""What the fleet tests share: the web they crawl, the crawl flags, how they run the
examples, and how they count pages and judge politeness from the server's log."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import orjson
from conftest import crawlkit

from crawlkit import streams

GAP = "0.05s"  # the gap between requests to one host that the fleet tests configure
# Over HTTPS, as most of the web is: seeds and links are https (testweb --tls).
WEB = ("--hosts", "10", "--pages", "12", "--special", "none", "--seed", "3", "--tls")


def fleet_env(**extra: str) -> dict[str, str]:
    """The examples call `crawlkit`: put this interpreter's bin directory first."""
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    return {**os.environ, "PATH": path, "SLICE": "6s", **extra}


def net_flags(web) -> list[str]:
    """crawl flags for the test web: any scope, the test's gap, its addresses, its CA."""
    return [
        "--scope",
        "any",
        "--min-delay",
        GAP,
        "--allow-net",
        web.info["allow_net"],
        "--hosts-file",
        str(web.hosts_file),
        "--per-ip",
        "1",
        *(["--ca-file", web.info["ca_file"]] if "ca_file" in web.info else []),
    ]


def fetched_pages(dirs: list[Path]) -> Counter[str]:
    """Pages fetched (path@host) over these state directories, with their counts."""
    c: Counter[str] = Counter()
    for d in dirs:
        for log in d.glob("crawl/cycles/*/fetch.ndjson"):
            for r in streams.read_records([log]):
                if r["outcome"] == "fetched":
                    path = r["url"].split("//", 1)[1].split("/", 1)[1]
                    c[path + "@" + r["host"].split(":")[0]] += 1
    return c


def audit_web(web) -> dict:
    """The politeness audit of everything the web answered so far (its own log)."""
    web.flush()  # every request answered so far is in the log
    res = crawlkit(
        "audit", "--server-log", str(web.log_path), "--min-gap", GAP, "--json", "--per-ip", "4"
    )
    return orjson.loads(res.stdout)
