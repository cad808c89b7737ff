#!/bin/sh
# An archivist's collection of one site: its pages and everything they need to show
# (images, stylesheets and what they import, scripts, fonts, media, also from other
# sites), politely, into WARC files, a CDXJ index, a report and a WACZ package.
#
#   examples/archive-site.sh https://example.org/ collection/ [crawl flags...]
#
# This is `crawlkit archive` (see `crawlkit archive --help`), which ships with the
# package; the script stays for the cron jobs and notes that call it.
#
#   collection/warc/             WARC/1.1 files and index.cdxj (pywb's CDXJ); the
#                                last WARC file holds the crawl log and report
#   collection/report.html       what was captured, requisites missing and why,
#   collection/report.json       hosts and seeds, errors with examples, WARC files
#                                with SHA-256, the politeness audit of the fetch log
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
if command -v crawlkit >/dev/null 2>&1; then
    exec crawlkit archive "$@"
fi
# Not on PATH (a new shell after `make demo`): the checkout's .venv, if there is one.
venv="$(dirname "$0")/../.venv/bin/crawlkit"
if [ -x "$venv" ]; then
    exec "$venv" archive "$@"
fi
echo "$0: crawlkit is not on PATH: install it (README \"Install\": pip install .) or activate .venv" >&2
exit 127
