"""Durable state directories: a manifest names what is committed; nothing else counts.

The frontier (``DIR/frontier``), the seen set (``DIR/seen``) and the dedup index
(``DIR/dedup``) keep their state the same way, through :class:`DurableDir`:

``manifest.json``
    The commit point. Its atomic replacement (temporary name, fsync, rename, fsync of
    the directory) is the moment a change happens; before it the old state stands,
    after it the new one (docs/design.md invariant 5).
generation files
    Immutable files the manifest names (segments, runs, filters, snapshots, side
    files). Each is written under a temporary name, fsynced and renamed to a name
    never used before; the directory is fsynced before the manifest that names it is
    written, so a committed manifest never names a file a crash could lose. A file the
    new manifest no longer names is *retired* and deleted after the commit.
leftovers
    Temporary files (``.tmp-NAME``; ``*.tmp`` from older writers) and generation files
    that no manifest names, left by a crash between the steps above. The owner deletes
    them with :meth:`DurableDir.remove_leftovers` when it opens the directory for
    writing; readers ignore them. Only names the owner claims (its ``owns`` pattern)
    and temporary names are ever deleted, so other files in the directory are safe.

A crash at any step therefore costs at most the uncommitted change, never committed
data, and the next writer finds a directory equal to the last commit plus debris it
knows how to remove.

An older layout named its manifest differently (the dedup index's ``MANIFEST.json``);
``legacy`` names are migrated to ``manifest.json`` by one rename on a writable open
(see :meth:`DurableDir.load`).

The caller serialises writers (``crawlkit.state.open_state`` locks the directory);
this module takes no locks.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from crawlkit.errors import StateError
from crawlkit.streams import fsync_dir

__all__ = ["MANIFEST", "TEMP_PREFIX", "DurableDir", "is_temp", "temp_path"]

MANIFEST = "manifest.json"
TEMP_PREFIX = ".tmp-"


def temp_path(path: Path) -> Path:
    """The temporary name a generation file is written under before its rename."""
    return path.with_name(TEMP_PREFIX + path.name)


def is_temp(name: str) -> bool:
    """A temporary file's name: ours (``.tmp-NAME``) or an older writer's (``*.tmp``)."""
    return name.startswith(TEMP_PREFIX) or name.endswith(".tmp")


class DurableDir:
    """One state directory committed through ``manifest.json`` (see the module doc).

    ``owns`` matches the names of the generation files this directory's owner writes;
    only those (and temporary files) are deleted as leftovers. ``what`` names the state
    in error messages (``"frontier"``). ``legacy`` lists older names of the manifest.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        owns: re.Pattern[str],
        what: str,
        legacy: tuple[str, ...] = (),
    ):
        self.path = Path(path)
        self.owns = owns
        self.what = what
        self.legacy = legacy
        self._retired: list[str] = []
        self._uncommitted: list[str] = []

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    # ----------------------------------------------------------------- reading

    def load(self, *, migrate: bool = True) -> Any | None:
        """The committed manifest's JSON value, or None when nothing was committed yet.

        A manifest under a ``legacy`` name is read as well; with ``migrate`` (a writer's
        open) it is first renamed to ``manifest.json`` (one atomic rename, then a
        directory fsync, so a crash leaves the old name or the new one, never neither).
        Raises :class:`StateError` when the manifest cannot be read or is not JSON, or
        when an old and a new manifest disagree.
        """
        path = self._manifest_to_read(migrate)
        if path is None:
            return None
        try:
            return orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StateError(f"cannot read {self.what} manifest {path}: {exc.strerror}") from exc
        except orjson.JSONDecodeError as exc:
            raise StateError(
                f"{self.what} manifest {path} is damaged: not valid JSON ({exc})"
            ) from exc

    def _manifest_to_read(self, migrate: bool) -> Path | None:
        try:
            # Exact names: on a case-insensitive file system MANIFEST.json and
            # manifest.json are one file, and Path.exists would say both are there.
            names = set(os.listdir(self.path))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StateError(f"cannot read {self.what} state {self.path}: {exc.strerror}") from exc
        for old in self.legacy:
            if old not in names:
                continue
            if MANIFEST in names:
                self._settle_both(old)
            elif migrate:
                self._migrate(old)
            else:
                return self.path / old
            return self.manifest_path
        return self.manifest_path if MANIFEST in names else None

    def _migrate(self, old: str) -> None:
        """Rename an old-named manifest to ``manifest.json`` once it is known to parse."""
        source = self.path / old
        try:
            orjson.loads(source.read_bytes())
        except OSError as exc:
            raise StateError(f"cannot read {self.what} manifest {source}: {exc.strerror}") from exc
        except orjson.JSONDecodeError as exc:
            raise StateError(
                f"{self.what} manifest {source} is damaged: not valid JSON ({exc})"
            ) from exc
        os.replace(source, self.manifest_path)
        fsync_dir(self.path)

    def _settle_both(self, old: str) -> None:
        """Both names exist: a copy of the same commit is removed, a conflict is refused."""
        source = self.path / old
        if source.read_bytes() != self.manifest_path.read_bytes():
            raise StateError(
                f"{self.path} holds both {old} (an older crawlkit's) and {MANIFEST}, and "
                f"they differ; move away the one that is not the latest commit"
            )
        source.unlink(missing_ok=True)
        fsync_dir(self.path)

    # ----------------------------------------------------------------- writing

    @contextlib.contextmanager
    def create(self, name: str) -> Iterator[BinaryIO]:
        """A new generation file ``name``: written to ``.tmp-NAME``, fsynced, renamed.

        The rename is made durable by the next :meth:`commit` (before its manifest), and
        :meth:`abort` deletes the file if that commit does not happen.
        """
        final = self.path / name
        tmp = temp_path(final)
        try:
            with open(tmp, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            self._uncommitted.append(name)
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def write(self, name: str, data: bytes | bytearray | memoryview) -> None:
        """Write the generation file ``name`` holding ``data`` (see :meth:`create`)."""
        with self.create(name) as f:
            f.write(data)

    def adopt(self, name: str) -> None:
        """Count a generation file written by other means (already fsynced and renamed)
        as part of the next commit, so :meth:`abort` deletes it if the commit fails."""
        self._uncommitted.append(name)

    @property
    def pending(self) -> bool:
        """True if files were written or retired since the last commit (or abort)."""
        return bool(self._uncommitted or self._retired)

    def retire(self, name: str) -> None:
        """Delete ``name`` after the next commit (the committed manifest still names it)."""
        self._retired.append(name)

    def commit(self, manifest: Any, *, collect: bool = True) -> None:
        """Make ``manifest`` the committed state, atomically (see the module doc).

        The directory is fsynced first, so every generation file renamed since the last
        commit is durable before a manifest names it. With ``collect`` the retired files
        are deleted once the manifest is in place (call :meth:`collect` later otherwise).
        """
        fsync_dir(self.path)
        data = orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n"
        tmp = temp_path(self.manifest_path)
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.manifest_path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        # Committed: from here on a failure must not make abort() delete what it names.
        self._uncommitted.clear()
        fsync_dir(self.path)
        if collect:
            self.collect()

    def collect(self) -> None:
        """Delete the files retired before the last commit (no manifest names them now)."""
        retired, self._retired = self._retired, []
        self.remove(retired)

    def abort(self) -> None:
        """After a failed commit: delete the generation files written since the last one.

        No manifest names them; deleting them now rather than at the next open gives
        back the space a full disk needs. Retired files stay (the old manifest names
        them), and the caller must not commit its in-memory state afterwards.
        """
        written, self._uncommitted = self._uncommitted, []
        self._retired.clear()
        self.remove(written)

    def remove(self, names: Iterable[str]) -> None:
        """Delete files of this directory by name; a missing one is no error."""
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                (self.path / name).unlink()

    # ----------------------------------------------------------------- leftovers

    def remove_leftovers(self, live: Iterable[str]) -> list[str]:
        """Delete temporary files and owned files not in ``live`` (the names the committed
        manifest holds); returns the names deleted. Call only as the directory's writer,
        before writing anything, and with the committed manifest's names."""
        keep = set(live)
        removed = []
        for entry in os.scandir(self.path):
            name = entry.name
            if name in keep or name == MANIFEST or name in self.legacy:
                continue
            if (is_temp(name) or self.owns.match(name)) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                removed.append(name)
        return removed
