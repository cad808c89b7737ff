#!/bin/sh
# One crawl cycle as separate stage commands over files: what `crawlkit crawl` does
# in one process, written out so each step can be inspected, replaced or distributed.
#
#   examples/one-cycle.sh STATE_DIR WORK_DIR [fetch flags...]
#
# Seeds: put URLs in WORK_DIR/seeds.txt before the first cycle. Extra flags go to
# `crawlkit fetch` (e.g. --allow-net, --hosts-file, --min-delay).
set -eu
if [ $# -lt 2 ]; then
    echo "usage: $0 STATE_DIR WORK_DIR [fetch flags...]" >&2
    exit 2
fi
S=$1
W=$2
shift 2
mkdir -p "$W"
if [ -f "$W/seeds.txt" ] && [ ! -f "$W/seeds.done" ]; then
    # canon drops the unusable lines' URL (null); seeds are depth 0, reason "seed"
    crawlkit canon --json "$W/seeds.txt" | grep -v '"url":null' \
        | sed 's/^{/{"reason":"seed","depth":0,/' \
        | crawlkit seen-merge --state "$S" \
        | crawlkit frontier add --state "$S" > "$W/seed-refusals.ndjson"
    touch "$W/seeds.done"
fi
crawlkit frontier next --state "$S" --max 20000 -o "$W/batch.ndjson.zst"
crawlkit fetch --state "$S" "$W/batch.ndjson.zst" --log "$W/fetched.ndjson.zst" \
    --redirects "$W/redirects.ndjson" "$@"
if ! ls "$S"/warc/new/*.warc.gz > /dev/null 2>&1; then
    echo "nothing was fetched in this cycle" >&2
    crawlkit frontier stats --state "$S"
    exit 0
fi
crawlkit extract "$S"/warc/new/*.warc.gz --pages "$W/pages.ndjson.zst" \
    --links "$W/links.ndjson.zst"
mkdir -p "$S/warc/done"
mv "$S"/warc/new/*.warc.gz "$S/warc/done/"
crawlkit dedup --state "$S" "$W/pages.ndjson.zst" --sites "$W/sites.ndjson" \
    -o "$W/dedup.ndjson.zst"
crawlkit frontier add --state "$S" "$W/sites.ndjson" > /dev/null
crawlkit frontier links --state "$S" "$W/links.ndjson.zst"   # site importance, budgets
crawlkit seen-merge --state "$S" "$W/links.ndjson.zst" "$W/redirects.ndjson" \
    | crawlkit frontier add --state "$S" > "$W/link-refusals.ndjson"
crawlkit recrawl --state "$S" "$W/fetched.ndjson.zst" "$W/pages.ndjson.zst" \
    | crawlkit frontier add --state "$S" > /dev/null
crawlkit frontier stats --state "$S"
