#!/bin/sh
# A sharded crawl run by GNU parallel: N shards at once on this machine, or spread
# over machines with `PARALLEL_SSH=--sshlogin host1,host2` (FLEET_DIR on a shared
# file system, or add --transferfile/--return as your setup needs).
#
#   examples/shards-parallel.sh FLEET_DIR N SEEDS [crawl flags...]
#
# Round after round: every shard crawls one time slice (SLICE, default 20s), then
# `crawlkit shard --deliver` moves the links each shard found for the others into
# their inboxes. It stops when no shard has work left and nothing was delivered
# (or after ROUNDS rounds, default 100). Without GNU parallel it falls back to
# xargs -P (same shards, same files).
set -eu
if [ $# -lt 3 ]; then
    echo "usage: $0 FLEET_DIR N SEEDS [crawl flags...]" >&2
    exit 2
fi
fleet=$1
n=$2
seeds=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$fleet"
[ -f "$fleet/map.json" ] || crawlkit shard --shards "$n" --save-map "$fleet/map.json"
shards=$(seq 0 $((n - 1)))
deliver_args=""
for k in $shards; do
    mkdir -p "$fleet/shard-$k"
    deliver_args="$deliver_args --deliver $fleet/shard-$k"
done
round=0
while [ "$round" -lt "${ROUNDS:-100}" ]; do
    round=$((round + 1))
    if command -v parallel > /dev/null 2>&1; then
        # shellcheck disable=SC2086
        parallel ${PARALLEL_SSH:-} --halt now,fail=1 -q -j "$n" \
            sh "$here/crawl-shard.sh" {} "$fleet" "$seeds" "$@" ::: $shards
    else
        echo "$shards" | tr ' ' '\n' \
            | xargs -P "$n" -I{} sh "$here/crawl-shard.sh" {} "$fleet" "$seeds" "$@"
    fi
    # shellcheck disable=SC2086
    delivered=$(crawlkit shard $deliver_args 2>&1 | sed -n 's/.*: \([0-9]*\) outbox files delivered.*/\1/p')
    busy=0
    for k in $shards; do
        grep -q '"stopped":"\(frontier empty\|done for this budget\)' "$fleet/shard-$k.last.json" \
            || busy=1
    done
    echo "round $round: delivered ${delivered:-0} files; shards busy: $busy" >&2
    if [ "$busy" = 0 ] && [ "${delivered:-0}" = 0 ]; then
        break
    fi
done
