#!/bin/sh
# A small pipeline of two stages over examples/urls.txt (no network).
# Canonicalize URLs (one record per input line, bad ones reported on stderr),
# keep the usable ones, and route them to 4 shards by registered-domain hash.
set -eu
cd "$(dirname "$0")/.."
out=demo-out
mkdir -p "$out"
echo "== crawlkit canon --json examples/urls.txt"
crawlkit canon --json examples/urls.txt | tee "$out/canon.ndjson"
echo "== keep usable URLs and shard them by site"
grep -v '"url":null' "$out/canon.ndjson" | crawlkit shard --shards 4 --out-dir "$out/shards"
ls -l "$out"/shards
echo "== where does one URL live?"
crawlkit shard --shards 4 --which https://news.example.co.uk/
