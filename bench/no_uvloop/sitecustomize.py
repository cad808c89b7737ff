"""For an A/B only: put this folder on PYTHONPATH and ``import uvloop`` fails, so
crawlkit's fetch loop falls back to asyncio's own (``crawlkit/stages/fetch.py``).

    bench/bench_crawl.py --tools crawlkit-b,crawlkit --b-env PYTHONPATH=bench/no_uvloop
"""

import sys
from importlib.machinery import ModuleSpec


class _NoUvloop:
    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if name == "uvloop" or name.startswith("uvloop."):
            raise ImportError("uvloop is blocked for an A/B (bench/no_uvloop)")
        return None


sys.meta_path.insert(0, _NoUvloop())
