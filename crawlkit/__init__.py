"""crawlkit: a polite, durable web crawler built as composable stages.

The library is the stages' logic over record iterators; the ``crawlkit`` command
(package ``crawlkit_cli``) is a thin layer that parses flags and opens streams.
"""

from crawlkit.errors import (
    CrawlkitError,
    InputError,
    InvalidURL,
    LockedError,
    OutputError,
    StateError,
    TruncatedInput,
    UsageError,
)

__version__ = "0.1.0"

__all__ = [
    "CrawlkitError",
    "InputError",
    "InvalidURL",
    "LockedError",
    "OutputError",
    "StateError",
    "TruncatedInput",
    "UsageError",
    "__version__",
]
