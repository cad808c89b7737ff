"""The seen set: a Bloom filter in front of exact 64-bit fingerprints in sorted runs.

Public API::

    SeenStore.open(state_dir, writable=True, capacity=..., fp_rate=...)
        .lookup(keys) -> Lookup(seen, maybes)   # filter, then exact confirmation
        .contains(keys) -> bool array
        .commit(new_keys)                       # atomic: run + filter bits + manifest
        .rebuild(capacity, fp_rate)             # a new filter from the exact runs
        .compact()                              # tiered merge of runs
    BloomFilter, bloom_size                     # the filter file on its own

See :mod:`crawlkit.seen.store` for the on-disk layout and the crash guarantees.
"""

from crawlkit.seen.bloom import BloomFilter, bloom_size
from crawlkit.seen.store import DEFAULT_CAPACITY, DEFAULT_FP_RATE, Lookup, SeenStore

__all__ = [
    "DEFAULT_CAPACITY",
    "DEFAULT_FP_RATE",
    "BloomFilter",
    "Lookup",
    "SeenStore",
    "bloom_size",
]
