#!/bin/sh
# A cron job that keeps a set of sites fresh, one slice of time per run.
#
#   */60 * * * *  /path/to/examples/cron-crawl.sh /srv/crawl seeds.txt >> /srv/crawl/cron.log 2>&1
#
# Each run continues the same crawl (new pages and due recrawls) and stops cleanly
# before the next run starts (--for 50m by default; CRAWL_FOR overrides). If the
# previous run is still going, the state directory's lock refuses this one and the
# script exits 0 so cron does not mail an error every hour.
# Extra flags after the seeds file go to `crawlkit crawl`.
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 CRAWL_DIR SEEDS_FILE [crawl flags...]" >&2
    exit 2
fi
dir=$1
seeds=$2
shift 2
mkdir -p "$dir"
date -u +"%Y-%m-%dT%H:%M:%SZ crawl starts" >&2
# This run's output goes to files of its own, renamed to last-run.* when it ends: a
# run that is skipped must not truncate the files the running one writes to.
out=$(mktemp "$dir/.run.XXXXXX") || exit 1
err=$out.err
crawlkit crawl "$seeds" --state "$dir/state" --for "${CRAWL_FOR:-50m}" --json "$@" \
    > "$out" 2> "$err"
status=$?
if [ $status -ne 0 ] && grep -q "in use by another process" "$err"; then
    rm -f "$out" "$err"
    echo "previous run still going; skipped" >&2
    exit 0
fi
mv -f "$out" "$dir/last-run.json"
mv -f "$err" "$dir/last-run.err"
cat "$dir/last-run.err" >&2
crawlkit report --state "$dir/state" --html "$dir/report.html" > "$dir/report.json" || true
exit $status
