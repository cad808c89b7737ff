#!/bin/sh
# An archivist's one-off collection: one site, politely, into WARC files.
#
#   examples/archive-site.sh https://example.org/ collection/ [crawl flags...]
#
# Crawls every page of the seed's registered domain (--scope site) with no per-site
# budget (it is the only site), writes WARC/1.1 files to collection/warc/ and a report
# to collection/report.html. Rerun the same command to continue after a stop.
# Extra flags go to `crawlkit crawl` (e.g. --for 8h, --min-delay 2s).
set -eu
if [ $# -lt 2 ]; then
    echo "usage: $0 SEED_URL OUT_DIR [crawl flags...]" >&2
    exit 2
fi
seed=$1
out=$2
shift 2
mkdir -p "$out"
crawlkit crawl "$seed" --state "$out/state" --scope site --no-budgets \
    --warc-dir "$out/warc" "$@"
crawlkit report --state "$out/state" --html "$out/report.html" > "$out/report.json"
ls "$out"/warc/*.warc.gz | wc -l | xargs printf '%s WARC files in %s/warc\n' - "$out" >&2
