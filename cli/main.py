"""The single exit point of the ``crawlkit`` command.

Exit status (docs/design.md): 0 success, 1 failure, 2 usage error. Errors are printed as
one line, ``crawlkit <command>: <message>``, on stderr; ``--debug`` adds the traceback.
A closed stdout (``crawlkit canon urls.txt | head``) ends the command quietly, with 0,
unless the command had more to say: an output it was asked for and did not write
(named on stderr), a damaged input it read (said on stderr), a failure it decided
before writing (audit's violations): then 1.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Sequence

import click
import typer
from crawlkit_cli.app import app, invocation

from crawlkit import early_signals, streams
from crawlkit.errors import CrawlkitError, describe_os_error, environment_error
from crawlkit.tempdirs import private_temp_dir


def _command_name(root: click.Command, argv: Sequence[str]) -> str:
    """The command words of ARGV (``frontier add``), importing only their modules."""
    group = root
    words: list[str] = []
    for arg in argv:
        if arg.startswith("-"):
            continue
        words.append(arg)
        if not isinstance(group, click.Group):
            break
        sub = group.get_command(click.Context(group), arg)
        if sub is None:
            words.pop()
            break
        if not isinstance(sub, click.Group):
            break
        group = sub
    return " ".join(words)


# The commands that run a crawl (archive is one with its report and WACZ after it):
# a stop while they start is held for the crawl, and their process pools' files go
# to a private temporary directory.
CRAWLS = ("crawl", "archive")


def run(argv: Sequence[str] | None = None) -> int:
    """Run one command line and return its exit status (never raises)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if next((a for a in args if not a.startswith("-")), None) in CRAWLS:
        # Before the crawl's modules are imported (a second or more): a job runner's
        # stop in that time is a clean stop, not an exit 143 (crawlkit.early_signals).
        early_signals.hold()
    command = typer.main.get_command(app)
    invocation.command = _command_name(command, args)
    invocation.debug = "--debug" in args
    invocation.argv = tuple(args)
    prefix = f"crawlkit {invocation.command}".strip()
    _hold_closed_stdio()
    _raise_open_file_limit()
    _quiet_resource_tracker()
    with contextlib.ExitStack() as stack:
        if invocation.command in CRAWLS:
            stack.enter_context(private_temp_dir())  # what a kill -9 leaves is swept
        return _run(command, args, prefix)


def _run(command: click.Command, args: list[str], prefix: str) -> int:
    try:
        result = command.main(args=args, prog_name="crawlkit", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        # click turns a broken stdout pipe (EPIPE) into sys.exit(1); for us a reader
        # that went away (`crawlkit canon big.txt | head`) is a normal end.
        if isinstance(exc.__context__, BrokenPipeError):
            return _broken_pipe()
        raise
    except click.UsageError as exc:
        # A value a config file gave (per-ip = 0) is refused as its flag's would be:
        # say which file and line it came from.
        param = getattr(exc, "param", None)
        where = None
        if param is not None and param.name and exc.ctx is not None:
            from crawlkit_cli.config_option import config_line  # (imports the crawl)

            where = config_line(exc.ctx, param.name)
        if where is not None:  # the mistake is in the file, not the command line
            print(f"{prefix}: {where}: {exc.format_message()}", file=sys.stderr)
            return 2
        print(f"{prefix}: {exc.format_message()}", file=sys.stderr)
        print(f"Try 'crawlkit {invocation.command} --help'.".replace("  ", " "), file=sys.stderr)
        return 2
    except click.Abort:
        return 130
    except CrawlkitError as exc:
        if invocation.debug:
            traceback.print_exc()
        print(f"{prefix}: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return _broken_pipe()
    except OSError as exc:  # the environment (full disk, read-only), not a bug
        if invocation.debug:
            traceback.print_exc()
        print(f"{prefix}: {describe_os_error(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: say so on one line, traceback only on request
        if invocation.debug:
            traceback.print_exc()
        environment = environment_error(exc)
        if environment is not None:  # (a full disk seen through a store's error)
            print(f"{prefix}: {environment}", file=sys.stderr)
            return 1
        print(
            f"{prefix}: internal error: {type(exc).__name__}: {exc} (rerun with --debug)",
            file=sys.stderr,
        )
        return 1
    return result if isinstance(result, int) else 0


class _ClosedStream:
    """Stands for a standard stream the caller closed (``>&-``): using it is an error
    that names it, which the command reports in one line (an ``OSError``)."""

    def __init__(self, name: str, fd: int) -> None:
        self._name, self._fd = name, fd

    def fileno(self) -> int:
        return self._fd  # (/dev/null holds the number)

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:  # (at exit: nothing was written)
        pass

    def __getattr__(self, attr: str) -> object:
        raise OSError(f"standard {self._name} is closed")


def _hold_closed_stdio() -> None:
    """Open /dev/null on each of fds 0-2 found closed, and make a closed stdin or
    stdout an error to use. Python leaves ``sys.stdout`` None for a closed fd 1 (a
    traceback at the first write or at exit), and the next file opened would take the
    number: a WARC as fd 1 of a worker that prints."""
    for fd, name in ((0, "input"), (1, "output"), (2, "error")):
        try:
            os.fstat(fd)
        except OSError:
            held = os.open(os.devnull, os.O_RDWR)
            if held != fd:  # (the lowest free number: fd itself, unless 0 or 1 too)
                os.dup2(held, fd)
                os.close(held)
            if fd == 2:
                sys.stderr = open(fd, "w", closefd=False)  # noqa: SIM115 - for good
            else:
                setattr(sys, ("stdin", "stdout")[fd], _ClosedStream(name, fd))


# Past this, a soft limit raised to an "unlimited" hard one gains nothing.
_MAX_OPEN_FILES = 1 << 20


def _quiet_resource_tracker() -> None:
    """No "leaked semaphore objects" warning after a kill -9 of a crawl or one of its
    workers, or a second SIGTERM: the process pools' queues hold named semaphores, and
    multiprocessing's resource tracker (started by the first pool, shared by its
    children) unlinks those a dead process left, then warns on stderr in two lines.
    The unlinking is the cleanup a crash needs; the death itself is reported in one
    line by the crawl. The tracker is started with this process's -W options."""
    sys.warnoptions.append("ignore:resource_tracker:UserWarning")


def _raise_open_file_limit() -> None:
    """Raise the soft RLIMIT_NOFILE to the hard one (issue 25: the usual soft limit of
    1,024 ended a crawl of 2,000 hosts, a connection each, in 2 s, while the hard limit
    is far higher; raising up to it needs no privilege). A failure leaves the limit as
    it was; the fetcher's connection pool stays under whatever it is
    (:func:`crawlkit.fetch.client.connection_budget`)."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = _MAX_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, _MAX_OPEN_FILES)
    if soft != resource.RLIM_INFINITY and soft < want:
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def _broken_pipe() -> int:
    # The reader went away (`crawlkit canon big.txt | head -1`). Python would print
    # "Exception ignored ... BrokenPipeError" when it flushes stdout at exit; point
    # stdout at /dev/null so that final flush is silent.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    if streams.ABANDONED:  # (`extract --links L | head -1`: L was asked for too)
        names = ", ".join(str(path) for path in streams.ABANDONED)
        print(
            f"crawlkit {invocation.command}: standard output was closed before the end; "
            f"not written: {names}",
            file=sys.stderr,
        )
        return 1
    if invocation.input_damaged:
        # (`canon cut.gz big.txt | head -1`: the damage was said on stderr, and the
        # exit status 1 it owes stands, as when the whole output was read)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    code = run(argv)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # What was left in the buffer met a reader gone: a normal end, unless an
        # output was abandoned. The command's own failure stands (`crawlkit crawl
        # --json | true` of a crawl that failed exited 0).
        code = _broken_pipe() or code
    sys.exit(code)


if __name__ == "__main__":
    main()
