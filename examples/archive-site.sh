#!/bin/sh
# An archivist's collection of one site: its pages and everything they need to show
# (images, stylesheets and what they import, scripts, fonts, media, also from other
# sites), politely, into WARC files, a CDXJ index, a report and a WACZ package.
#
#   examples/archive-site.sh https://example.org/ collection/ [crawl flags...]
#
#   collection/warc/             WARC/1.1 files and index.cdxj (pywb's CDXJ)
#   collection/report.html       seeds, settings, content types, status codes and
#   collection/report.json       errors with examples, requisites fetched and
#                                missing, WARC files with SHA-256, and the politeness
#                                audit of the crawl's own fetch log
#   collection/collection.wacz   the WARC files, index, page list and both reports,
#                                for ReplayWeb.page or pywb (WACZ 1.1.1)
#
# Crawls the seed's registered domain (--scope site) with no per-site budget (it is
# the only site). Rerun the same command to continue after a stop; the WACZ is
# written again from all WARC files. Extra flags go to `crawlkit crawl` (e.g. --for
# 8h, --min-delay 2s, --exclude '/calendar/', --ignore-file ignore.txt).
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
crawlkit wacz "$out"/warc/*.warc.gz -o "$out/collection.wacz" --title "Archive of $seed" \
    --main-url "$seed" --report "$out/report.json" --report "$out/report.html"
warcs=$(find "$out/warc" -maxdepth 1 -name '*.warc.gz' | wc -l | tr -d ' ')
echo "$warcs WARC files in $out/warc; package: $out/collection.wacz" >&2
