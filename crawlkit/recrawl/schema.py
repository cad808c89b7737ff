"""The recrawl history's SQLite schema: a new table, and the migrations of older ones.

Version 2 is this crawlkit's (``history``, ``meta``, ``sites``); a version 1 table
(crawlkit before rate estimates) is migrated in one transaction, and a version 2
table written before the ``spread`` column gets it (:mod:`crawlkit.recrawl.history`
calls these when it opens the file).
"""

from __future__ import annotations

import sqlite3

from crawlkit.recrawl import estimate
from crawlkit.times import DAY

__all__ = ["SCHEMA_VERSION", "add_spread", "create", "migrate_v1"]

#: The version this crawlkit writes (SQLite's ``user_version``).
SCHEMA_VERSION = 2


def create(db: sqlite3.Connection) -> None:
    """A new table of this version."""
    db.executescript(
        f"""
        CREATE TABLE IF NOT EXISTS history (
            fp INTEGER PRIMARY KEY, url TEXT NOT NULL, host TEXT, site TEXT,
            depth INTEGER, priority INTEGER NOT NULL, last_fetch REAL,
            last_event REAL NOT NULL, status INTEGER, outcome TEXT, etag TEXT,
            last_modified TEXT, digest TEXT, simhash INTEGER, lastmod REAL,
            interval REAL NOT NULL, changes INTEGER NOT NULL, checks INTEGER NOT NULL,
            errors INTEGER NOT NULL, pending_change INTEGER NOT NULL, due REAL NOT NULL,
            emitted REAL, rate REAL, observations BLOB, observed REAL, spread REAL
        );
        CREATE INDEX IF NOT EXISTS history_due ON history (due);
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value REAL);
        CREATE TABLE IF NOT EXISTS sites (site TEXT PRIMARY KEY, rate REAL NOT NULL);
        PRAGMA user_version = {SCHEMA_VERSION};
        """
    )
    db.commit()


def add_spread(db: sqlite3.Connection) -> None:
    """Version 2 histories written before the ``spread`` column get it (NULL: the
    prior's spread until the URL's next visit). Older readers ignore it."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(history)")}
    if "spread" not in columns:
        try:
            db.execute("ALTER TABLE history ADD COLUMN spread REAL")
            db.commit()
        except sqlite3.OperationalError as exc:  # another process added it first
            if "duplicate column" not in str(exc):
                raise


def migrate_v1(db: sqlite3.Connection) -> None:
    """Version 1 → 2 in one transaction: the rate columns, and each URL's checks
    and changes as observations at its old interval (what it was visited at)."""
    db.execute("BEGIN IMMEDIATE")
    if db.execute("PRAGMA user_version").fetchone()[0] != 1:  # another process did it
        db.rollback()
        return
    db.execute("ALTER TABLE history ADD COLUMN rate REAL")
    db.execute("ALTER TABLE history ADD COLUMN observations BLOB")
    db.execute("ALTER TABLE history ADD COLUMN observed REAL")
    db.execute("UPDATE history SET observed = last_fetch")
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value REAL)")
    db.execute("CREATE TABLE IF NOT EXISTS sites (site TEXT PRIMARY KEY, rate REAL NOT NULL)")
    rows = db.execute(
        "SELECT fp, checks, changes, interval FROM history WHERE checks > 1"
    ).fetchall()
    updates = []
    for fp, checks, changes, interval in rows:
        seen = min(checks - 1, estimate.KEEP)
        changed = min(changes, seen)
        obs = [(interval, estimate.CHANGED)] * changed
        obs += [(interval, estimate.UNCHANGED)] * (seen - changed)
        # A migrated entry's rate starts from one change a day.
        updates.append((estimate.pack(obs), estimate.rate(obs, 1 / DAY, point="mean"), fp))
    db.executemany("UPDATE history SET observations = ?, rate = ? WHERE fp = ?", updates)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    db.commit()
