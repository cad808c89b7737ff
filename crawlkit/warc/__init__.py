"""WARC files: reading, writing, salvage after a crash, CDXJ indexes."""
