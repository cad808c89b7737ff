#!/bin/sh
# One time slice of one shard: what every job of a fleet runs.
#
#   examples/crawl-shard.sh K FLEET_DIR SEEDS [crawl flags...]
#
# FLEET_DIR holds map.json (the slot map) and shard-K/ (this shard's state). Every
# shard gets the same seeds and keeps its own. The summary goes to
# FLEET_DIR/shard-K.last.json. Used by shards-parallel.sh, the Slurm array job and
# the Kubernetes Indexed Job in this directory.
set -eu
k=$1
fleet=$2
seeds=$3
shift 3
exec crawlkit crawl "$seeds" --state "$fleet/shard-$k" --shard "$k" \
    --slot-map "$fleet/map.json" --for "${SLICE:-20s}" --json "$@" \
    > "$fleet/shard-$k.last.json"
