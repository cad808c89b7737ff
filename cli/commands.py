"""Imports every command module so each registers itself on the app, in help order."""

from crawlkit_cli import canon, shard  # noqa: F401
