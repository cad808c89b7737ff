"""Kill windows of ``crawlkit crawl``, looked for one file operation at a time.

For each N given, a crawl of a small test web runs in a child process that dies
(``os._exit(9)``: no clean-up, no flush, like a SIGKILL) right after its N-th call of
one file operation (``--op``: ``mkdir``, ``replace``, ``unlink``; ``fsync`` dies just
before the call). The same crawl is then run to the end, and the server's log is
compared with the web: a run that fails, or a page never requested, is printed as BAD
with the end of the rerun's stderr. ``--at 0`` runs one crawl to the end and prints how
many calls it made, to choose the Ns. With ``--workers 2`` (any crawl option after
``--``) the parent process counts, or with ``--in crawl-worker-K`` worker K does (the
counting is installed in every process through a ``sitecustomize`` module, and counts
only in the process of that name); what an extract pool's processes do is not counted.

Run on demand (never in CI), from the repository::

    .venv/bin/python bench/crash_hunt.py --op mkdir --at 0
    .venv/bin/python bench/crash_hunt.py --op mkdir --at 13,16,19,22
    .venv/bin/python bench/crash_hunt.py --op fsync --at 1,2,3 -- --workers 2
    .venv/bin/python bench/crash_hunt.py --op replace --in crawl-worker-1 --at 5 -- --workers 2

Each kill and rerun takes 5-20 s. A crawl (killed or rerun) still running after 120 s
is a hang: each of its processes is dumped with py-spy (the ``bench`` extra), it is
killed, and the kill is BAD.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import start_testweb  # noqa: E402  (the suite's test web helper)

# Loaded at the start of every Python process of the crawl (PYTHONPATH), so a spawned
# worker counts too; only the process named CRASH_HUNT_IN counts and dies.
SITECUSTOMIZE = r"""
import atexit, multiprocessing, os, pathlib, sys

op, at = os.environ["CRASH_HUNT_OP"], int(os.environ["CRASH_HUNT_AT"])
name = os.environ["CRASH_HUNT_IN"]
# The crawl's first process is MainProcess; so is a fork server it starts, which is not.
root = int(os.environ.setdefault("CRASH_HUNT_ROOT", str(os.getpid())))
calls = [0]

def counting():
    here = multiprocessing.current_process().name
    return here == name and (name != "MainProcess" or os.getpid() == root)

def report():
    if counting():
        sys.stderr.write(f"CALLS {calls[0]}\n")

atexit.register(report)

def count():
    if not counting():
        return
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
"""


def hunt(op: str, at: int, where: str, extra: list[str], workdir: Path) -> bool:
    """Kill process ``where`` at its call ``at`` of ``op`` and finish the crawl; True if
    nothing was lost."""
    hooks = workdir / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hooks), str(ROOT)]),
        "CRASH_HUNT_OP": op,
        "CRASH_HUNT_AT": str(at),
        "CRASH_HUNT_IN": where,
    }
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
        child = _run([sys.executable, "-m", "crawlkit", *args], env)
        calls = [ln for ln in child.stderr.decode().splitlines() if ln.startswith("CALLS")]
        rerun = _run([sys.executable, "-m", "crawlkit", *args], None)
        port = f":{web.port}"
        pages = {u.replace(port, "") for h in web.hosts_of_kind("ordinary") for u in h["pages"]}
        asked = {f"http://{q['host']}{q['path']}".replace(port, "") for q in web.requests()}
    lost = pages - asked
    good = rerun.returncode == 0 and not lost and child.returncode != HUNG
    print(
        f"{op} in={where} at={at} {' '.join(calls)} child={child.returncode} "
        f"rerun={rerun.returncode} lost={len(lost)} {'ok' if good else 'BAD'}",
        flush=True,
    )
    if not good:
        print("    " + rerun.stderr.decode()[-800:].replace("\n", "\n    "), flush=True)
    return good


HUNG = -1000  # the return code given to a run that did not end within HANG_AFTER
HANG_AFTER = 120.0


def _run(argv: list[str], env: dict[str, str] | None) -> subprocess.CompletedProcess[bytes]:
    """Run a crawl; one still running after HANG_AFTER seconds is a hang (a crawl of
    this web takes seconds): every process of it is dumped with py-spy, then killed."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=out, stderr=err, start_new_session=True
        )
        try:
            code = proc.wait(HANG_AFTER)
        except subprocess.TimeoutExpired:
            spy = Path(sys.executable).with_name("py-spy")
            for pid in [proc.pid, *_descendants(proc.pid)]:
                dump = subprocess.run(
                    [str(spy), "dump", "--pid", str(pid)], capture_output=True, timeout=60
                )
                print(f"    HUNG: pid {pid}\n{dump.stdout.decode()[-3000:]}", flush=True)
            os.killpg(proc.pid, 9)
            proc.wait()
            code = HUNG
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, code, out.read(), err.read())


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc's children lists)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        here = todo.pop()
        for task in Path(f"/proc/{here}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--op", choices=("mkdir", "replace", "unlink", "fsync"), required=True)
    parser.add_argument("--at", required=True, help="comma-separated call numbers (0: count)")
    parser.add_argument(
        "--in",
        dest="where",
        default="MainProcess",
        help="the process that counts and dies: MainProcess (default) or crawl-worker-K",
    )
    parser.add_argument("extra", nargs="*", help="crawl options (after --)")
    opts = parser.parse_args()
    bad = 0
    for at in (int(x) for x in opts.at.split(",")):
        with tempfile.TemporaryDirectory(prefix="crash-hunt-") as tmp:
            bad += not hunt(opts.op, at, opts.where, opts.extra, Path(tmp))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
