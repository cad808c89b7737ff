"""Sharding: sites to slots to shards, and the mail between shards."""
