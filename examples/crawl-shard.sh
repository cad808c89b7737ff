#!/bin/sh
# One time slice of one shard: what every task of a fleet runs.
#
#   examples/crawl-shard.sh K FLEET_DIR SEEDS [crawl flags...]
#
# FLEET_DIR holds map.json (the slot map) and shard-K/ (this shard's state). Every
# shard gets the same seeds and keeps its own. The slice lasts SLICE (default 20s) or
# less: the crawl ends early when nothing is due before then. The summary (crawl
# --json) goes to FLEET_DIR/shard-K.last.json, where the driver examples/fleet.sh
# reads it; fleet.sh runs this script under GNU parallel, xargs or Slurm
# (slurm-shards.sbatch), and k8s-indexed-job.yaml runs the same command in a pod.
set -eu
if [ $# -lt 3 ]; then
    echo "usage: $0 K FLEET_DIR SEEDS [crawl flags...]" >&2
    exit 2
fi
k=$1
fleet=$2
seeds=$3
shift 3
exec crawlkit crawl "$seeds" --state "$fleet/shard-$k" --shard "$k" \
    --slot-map "$fleet/map.json" --for "${SLICE:-20s}" --json "$@" \
    > "$fleet/shard-$k.last.json"
