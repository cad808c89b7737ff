#!/bin/sh
# A sharded crawl run by GNU parallel: N shards at once on this machine, or spread
# over machines with `PARALLEL_SSH=--sshlogin host1,host2` (FLEET_DIR and examples/
# at the same paths there, e.g. on a shared file system).
#
#   examples/shards-parallel.sh FLEET_DIR N SEEDS [crawl flags...]
#
# The fleet driver examples/fleet.sh with RUNNER=parallel (xargs -P without GNU
# parallel): rounds of time slices (SLICE, default 20s), `crawlkit shard --deliver`
# between rounds, and a stop when no shard has work due before the next round (or
# after ROUNDS rounds, default 100). See fleet.sh for the details.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${RUNNER:-}" ]; then
    if command -v parallel > /dev/null 2>&1; then RUNNER=parallel; else RUNNER="xargs"; fi
fi
export RUNNER
exec sh "$here/fleet.sh" "$@"
