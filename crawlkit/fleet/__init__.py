"""The fleet: what a crawl over many shards needs beyond one shard."""
