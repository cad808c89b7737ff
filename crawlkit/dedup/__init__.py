"""Duplicate detection: exact digests and 64-bit simhashes, and their store."""
