"""simhash of long texts: this tree's module against a git revision's (first call, memory).

Run on demand (never in CI)::

    nice .venv/bin/python bench/bench_simhash_long.py [--baseline HEAD]

Extract caps a page's HTML at 5 MiB, so a text can be ~5 MB long. For each version,
in a fresh process: the CPU seconds of the first and the second simhash of a 5.25 MB
text (the first builds the powers of the polynomial hash), the bytes of power tables
the module keeps afterwards, and the peak RSS the two calls add; then, in one
process, the median time of texts of 60 KB to 1 MB, the versions in turns. The
simhashes must be equal.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

WORDS = "Gurcus bramvoun miondround stiol tea weat prist kea lolgar seatlerfot "


def load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def first_calls(path: str) -> None:
    """Child: the first-call figures of the module at ``path``, as one JSON line."""
    import resource

    import numpy as np

    module = load(path)
    module.simhash("hello world " * 1500)  # a page's worth first, as a worker would
    text = WORDS * 75_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    value = module.simhash(text)
    first = time.process_time() - start
    start = time.process_time()
    module.simhash(text)
    second = time.process_time() - start
    kept = sum(
        v.nbytes for v in vars(module).values() if isinstance(v, np.ndarray) and v.size >= 4096
    ) + sum(a.nbytes for a in getattr(module, "_POW_CACHE", {}).values())
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    out = {"first": first, "second": second, "kept": kept, "rss": grown, "value": value}
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="HEAD")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        first_calls(args.child)
        return
    old = Path(tempfile.mkdtemp()) / "simhash_base.py"
    old.write_bytes(
        subprocess.run(
            ["git", "show", f"{args.baseline}:crawlkit/dedup/simhash.py"],
            check=True,
            capture_output=True,
        ).stdout
    )
    new = str(Path(__file__).resolve().parent.parent / "crawlkit/dedup/simhash.py")
    print(f"5.25 MB text, fresh process, {args.repeat} runs each, medians")
    values: set[int] = set()
    for name, path in (("baseline", str(old)), ("this tree", new)):
        runs = []
        for _ in range(args.repeat):
            line = subprocess.run(
                [sys.executable, __file__, "--child", path],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs.append(json.loads(line))
        values.update(r["value"] for r in runs)
        med = {k: statistics.median(r[k] for r in runs) for k in ("first", "second", "rss")}
        print(
            f"  {name:10s} first {med['first']:.3f} s, second {med['second']:.3f} s, "
            f"arrays kept {runs[0]['kept'] / 1e6:.1f} MB, peak RSS +{med['rss']:.0f} MiB"
        )
    a, b = load(str(old)), load(new)
    print("texts in one process, median of 7 x 5 calls, in turns")
    for kb in (60, 100, 300, 1000):
        text = WORDS * (kb * 1000 // len(WORDS))
        a.simhash(text), b.simhash(text)  # tables grown before timing
        times: dict[str, list[float]] = {"a": [], "b": []}
        for _ in range(7):
            for key, mod in (("a", a), ("b", b)):
                start = time.perf_counter()
                for _ in range(5):
                    mod.simhash(text)
                times[key].append((time.perf_counter() - start) / 5)
        ta, tb = statistics.median(times["a"]), statistics.median(times["b"])
        print(f"  {kb:5d} KB  baseline {1e3 * ta:6.2f} ms  this tree {1e3 * tb:6.2f} ms", end="")
        print(f" ({tb / ta:.2f}x)")
    same = all(a.simhash(WORDS * k) == b.simhash(WORDS * k) for k in (1, 900, 75_000))
    print(f"  same simhashes: {same and len(values) == 1}")


if __name__ == "__main__":
    main()
