"""Kill windows of ``crawlkit crawl``, looked for one file operation at a time.

For each N given, a crawl of a small test web runs in a child process that dies
(``os._exit(9)``: no clean-up, no flush, like a SIGKILL) right after its N-th call of
one file operation (``--op``: ``mkdir``, ``replace``, ``unlink``; ``fsync`` dies just
before the call). The same crawl is then run to the end, and the server's log is
compared with the web: a run that fails, or a page never requested, is printed as BAD
with the end of the rerun's stderr. ``--at 0`` runs one crawl to the end and prints how
many calls it made, to choose the Ns. With ``--workers 2`` (any crawl option after
``--``) only the parent process counts: the workers are processes of their own.

Run on demand (never in CI), from the repository::

    .venv/bin/python bench/crash_hunt.py --op mkdir --at 0
    .venv/bin/python bench/crash_hunt.py --op mkdir --at 13,16,19,22
    .venv/bin/python bench/crash_hunt.py --op fsync --at 1,2,3 -- --workers 2

Each kill and rerun takes 5-20 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import start_testweb  # noqa: E402  (the suite's test web helper)

CHILD = r"""
import atexit, os, pathlib, sys
from crawlkit_cli.main import main

op, at = sys.argv[1], int(sys.argv[2])
calls = [0]
atexit.register(lambda: sys.stderr.write(f"CALLS {calls[0]}\n"))

def count():
    calls[0] += 1
    if calls[0] == at:
        os._exit(9)

def after(real):
    def wrapped(*args, **kwargs):
        out = real(*args, **kwargs)
        count()
        return out
    return wrapped

def before(real):
    def wrapped(*args, **kwargs):
        count()
        return real(*args, **kwargs)
    return wrapped

if op == "mkdir":
    pathlib.Path.mkdir = after(pathlib.Path.mkdir)
elif op == "replace":
    os.replace = after(os.replace)
elif op == "unlink":
    pathlib.Path.unlink = after(pathlib.Path.unlink)
elif op == "fsync":
    os.fsync = before(os.fsync)
sys.argv = ["crawlkit", *sys.argv[3:]]
main()
"""


def hunt(op: str, at: int, extra: list[str], workdir: Path) -> bool:
    """Kill at call ``at`` of ``op`` and finish the crawl; True if nothing was lost."""
    web_args = ("--hosts", "2", "--pages", "25", "--special", "none")
    with start_testweb(workdir, *web_args) as web:
        args = [
            "crawl",
            str(web.seeds),
            "--state",
            str(workdir / "state"),
            "--scope",
            "any",
            "--min-delay",
            "0.05s",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--timeout",
            "3s",
            *extra,
        ]
        child = subprocess.run(
            [sys.executable, "-c", CHILD, op, str(at), *args],
            cwd=ROOT,
            capture_output=True,
            timeout=300,
        )
        calls = [ln for ln in child.stderr.decode().splitlines() if ln.startswith("CALLS")]
        rerun = subprocess.run(
            [sys.executable, "-m", "crawlkit", *args], cwd=ROOT, capture_output=True, timeout=300
        )
        port = f":{web.port}"
        pages = {u.replace(port, "") for h in web.hosts_of_kind("ordinary") for u in h["pages"]}
        asked = {f"http://{q['host']}{q['path']}".replace(port, "") for q in web.requests()}
    lost = pages - asked
    good = rerun.returncode == 0 and not lost
    print(
        f"{op} at={at} {' '.join(calls)} child={child.returncode} rerun={rerun.returncode} "
        f"lost={len(lost)} {'ok' if good else 'BAD'}",
        flush=True,
    )
    if not good:
        print("    " + rerun.stderr.decode()[-800:].replace("\n", "\n    "), flush=True)
    return good


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--op", choices=("mkdir", "replace", "unlink", "fsync"), required=True)
    parser.add_argument("--at", required=True, help="comma-separated call numbers (0: count)")
    parser.add_argument("extra", nargs="*", help="crawl options (after --)")
    opts = parser.parse_args()
    bad = 0
    for at in (int(x) for x in opts.at.split(",")):
        with tempfile.TemporaryDirectory(prefix="crash-hunt-") as tmp:
            bad += not hunt(opts.op, at, opts.extra, Path(tmp))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
