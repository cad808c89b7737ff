#!/bin/sh
# The fleet driver every runner uses: rounds of time slices until nothing is due.
#
#   examples/fleet.sh FLEET_DIR N SEEDS [crawl flags...]
#
# A round runs one time slice (SLICE, default 20s) of each of the N shards, each
# through examples/crawl-shard.sh, on the runner RUNNER names:
#   parallel  GNU parallel on this machine (the default when it is installed); with
#             PARALLEL_SSH='--sshlogin h1,h2' on other machines (FLEET_DIR and this
#             directory at the same paths there, e.g. on a shared file system)
#   xargs     xargs -P N on this machine (the default without GNU parallel)
#   slurm     one array job a round: sbatch --wait --array=0-(N-1) slurm-shards.sbatch;
#             SBATCH_ARGS adds sbatch options (e.g. '--cpus-per-task=1 --mem=0')
#   k8s       one Indexed Job a round from K8S_JOB (default k8s-indexed-job.yaml):
#             kubectl create, wait until it is Complete or Failed, delete. FLEET_DIR
#             is where this machine mounts the Job's volume; SEEDS must be
#             FLEET_DIR/seeds.txt; the crawl flags are in the manifest (SLICE is
#             written into it).
#             The Job's state is polled every K8S_POLL seconds (default 10).
# Between rounds `crawlkit shard --deliver` moves the links each shard found for the
# others into their inboxes.
#
# Stop rule: after a round in which nothing was delivered and every shard ended its
# slice idle (frontier empty, budgets spent, --max-pages reached, or nothing due
# before the slice's end: a URL deferred for an hour ends the slice at once) with no
# deferred URL due before the next round would end (the summary's next_retry_at).
# What is deferred longer waits in its shard's state for the next run of this script
# (cron, or the next sbatch). Also stops after ROUNDS rounds (default 100). Exit 1 when a shard's slice failed (its
# summary FLEET_DIR/shard-K.last.json is missing or empty): the round is delivered
# first, and the next run continues where the shard stopped. A task killed at its
# time limit stops gracefully (SIGTERM) and counts as busy, not failed.
#
# SIGTERM, SIGINT or SIGHUP to this script stops the round: with the parallel and
# xargs runners every process of the round (the runner, the shards' crawls, which end
# their slice as on any SIGTERM) is signalled, this script waits until all have
# ended, so their state directories are free for the next run, and exits 128 + the
# signal. With slurm and k8s the tasks run elsewhere: cancel them there (scancel,
# kubectl delete job).
#
# Any FLEET_DIR and any crawl flags: the flags reach each task through the file
# FLEET_DIR/crawl-flags (NUL-separated, read with xargs -0), never through a runner's
# command template, so '{}' in a flag stays '{}', and paths may hold spaces.
set -eu
if [ $# -lt 3 ]; then
    echo "usage: $0 FLEET_DIR N SEEDS [crawl flags...]" >&2
    exit 2
fi
n=$2
case $n in '' | *[!0-9]* | 0)
    echo "$0: N must be a positive number of shards, not '$n'" >&2
    exit 2
    ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
fleet=$(cd "$1" && pwd)  # absolute: job runners start tasks in other directories
seeds=$3
case $seeds in /*) ;; *) seeds=$(pwd)/$seeds ;; esac
shift 3
if [ -z "${RUNNER:-}" ]; then
    if command -v parallel > /dev/null 2>&1; then RUNNER=parallel; else RUNNER="xargs"; fi
fi
case $RUNNER in
parallel | xargs | slurm) ;;
k8s)
    if [ $# -gt 0 ]; then
        echo "$0: with RUNNER=k8s the crawl flags go in the manifest (CRAWL_FLAGS)" >&2
        exit 2
    fi
    ;;
*)
    echo "$0: RUNNER must be parallel, xargs, slurm or k8s, not '$RUNNER'" >&2
    exit 2
    ;;
esac
export SLICE="${SLICE:-20s}"
case $SLICE in
*[!0-9smhd]* | [!0-9]* | *[smhd]?*)
    echo "$0: SLICE must be a whole number of s, m, h or d (e.g. 20s, 50m), not '$SLICE'" >&2
    exit 2
    ;;
*d) slice_s=$((${SLICE%d} * 86400)) ;;
*h) slice_s=$((${SLICE%h} * 3600)) ;;
*m) slice_s=$((${SLICE%m} * 60)) ;;
*) slice_s=${SLICE%s} ;;
esac
export CRAWLKIT_EXAMPLES="$here"  # where the Slurm job finds crawl-shard.sh
export FLEET_DIR="$fleet" FLEET_SEEDS="$seeds"  # what a parallel or xargs task reads

[ -f "$fleet/map.json" ] || crawlkit shard --shards "$n" --save-map "$fleet/map.json"
shards=$(seq 0 $((n - 1)))
for k in $shards; do
    mkdir -p "$fleet/shard-$k"
done
mkdir -p "$fleet/logs"
: > "$fleet/.crawl-flags.$$"
[ $# -eq 0 ] || printf '%s\0' "$@" > "$fleet/.crawl-flags.$$"
mv -f "$fleet/.crawl-flags.$$" "$fleet/crawl-flags"

# One task of the parallel and xargs runners: shard $1's slice, the crawl flags read
# from the file (xargs -0 runs crawl-shard.sh once, with none when the file is empty).
# The template holds no runner placeholder and no user data.
task='exec xargs -0 -x sh "$CRAWLKIT_EXAMPLES/crawl-shard.sh" "$1" "$FLEET_DIR" "$FLEET_SEEDS" < "$FLEET_DIR/crawl-flags"'

# run_round CRAWL_FLAGS...: one slice of every shard; its status is only reported (the
# summaries say what each shard did). The parallel and xargs runners start in a
# process group of their own (setsid) whose id is kept in round_pid for on_signal.
run_round() {
    group=""
    command -v setsid > /dev/null 2>&1 && group=setsid
    case $RUNNER in
    parallel)
        # shellcheck disable=SC2086
        # parallel puts each job in a process group of its own and, stopped, signals
        # them by --termseq: one TERM (a second would end a crawl without its
        # summary), a minute to end the slice, then KILL
        $group parallel --will-cite ${PARALLEL_SSH:-} -q -j "$n" --env FLEET_DIR \
            --env FLEET_SEEDS --env CRAWLKIT_EXAMPLES --env SLICE --termseq TERM,60000,KILL,25 \
            sh -c "$task" sh ::: $shards < /dev/null &
        round_pid=$!
        wait "$round_pid"
        ;;
    xargs)
        # shellcheck disable=SC2086
        printf '%s\n' $shards | $group xargs -P "$n" -n 1 sh -c "$task" sh &
        round_pid=$!
        wait "$round_pid"
        ;;
    slurm)
        # --wait returns when every task has ended, whatever its state: no dependency
        # that can wait forever
        # shellcheck disable=SC2086
        sbatch --wait --quiet --array="0-$((n - 1))" --output="$fleet/logs/%x-%A-%a.log" \
            ${SBATCH_ARGS:-} "$here/slurm-shards.sbatch" "$fleet" "$seeds" "$@"
        ;;
    k8s) k8s_round ;;
    esac
}

# k8s_round: create this round's Indexed Job (N completions), wait for its end
# (activeDeadlineSeconds in the manifest bounds it), delete it
k8s_round() {
    job=$(sed -e "s/^\( *\)completions: .*/\1completions: $n/" \
        -e "s/^\( *\)parallelism: .*/\1parallelism: $n/" \
        -e "s/{name: SLICE, value: [^}]*}/{name: SLICE, value: $SLICE}/" \
        "${K8S_JOB:-$here/k8s-indexed-job.yaml}" | kubectl create -f - -o name)
    while :; do
        state=$(kubectl get "$job" -o 'jsonpath={.status.conditions[?(@.status=="True")].type}')
        case $state in *Complete* | *Failed*) break ;; esac
        sleep "${K8S_POLL:-10}"
    done
    kubectl logs -l "job-name=${job#*/}" --all-containers --prefix --tail=-1 \
        > "$fleet/logs/${job#*/}.log" 2>&1 || true  # every pod's, not only the first
    kubectl delete "$job" --wait=false > /dev/null
    case $state in *Failed*) return 1 ;; esac
}

# how a crawl says it ended idle: nothing more to do, or nothing due before its slice ends
idle='frontier empty|done for this budget|nothing due before|nothing more can be fetched|page limit'
# due_at SUMMARY: when the shard's first deferred URL is due, in seconds since the
# epoch (a number past any round's end when nothing waits); GNU date reads the time
due_at() {
    at=$(sed -n 's/.*"next_retry_at":"\([^"]*\)".*/\1/p' "$1")
    if [ -n "$at" ]; then date -u -d "$at" +%s; else echo 99999999999; fi
}

# deliver: every shard's outboxes into the owners' inboxes (crawlkit shard --deliver)
deliver() {
    set --
    for k in $shards; do
        set -- "$@" --deliver "$fleet/shard-$k"
    done
    crawlkit shard "$@"
}

# on_signal NAME NUMBER: stop the round's processes, wait until they have ended (their
# crawls end the slice as on any SIGTERM and free their state), exit 128 + NUMBER
round_pid=""
on_signal() {
    trap '' TERM INT HUP
    echo "$0: stopped by SIG$1 in round $round; stopping the round's shards" >&2
    if [ -n "$round_pid" ]; then
        if kill -s TERM -- "-$round_pid" 2> /dev/null; then
            # (kill -s 0, not kill -0: dash reads "-0 --" as a bad number and fails)
            while kill -s 0 -- "-$round_pid" 2> /dev/null; do sleep 0.1; done
        else  # no process group of its own (no setsid): the runner alone
            kill -s TERM "$round_pid" 2> /dev/null || true
            wait "$round_pid" || true
        fi
    fi
    exit $((128 + $2))
}
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT
trap 'on_signal HUP 1' HUP
round=0
while :; do
    round=$((round + 1))
    for k in $shards; do
        rm -f "$fleet/shard-$k.last.json"  # a summary always comes from this round
    done
    run_round "$@" || echo "round $round: the $RUNNER runner reported a failure" >&2
    round_pid=""
    if said=$(deliver 2>&1); then delivery_ok=1; else
        delivery_ok=""
        echo "$said" >&2
    fi
    delivered=$(echo "$said" | sed -n 's/.*: \([0-9]*\) outbox files delivered.*/\1/p')
    busy="" failed=""
    next_round_ends=$(($(date +%s) + slice_s))
    for k in $shards; do
        summary="$fleet/shard-$k.last.json"
        if [ ! -s "$summary" ]; then
            failed="$failed $k"
        elif ! grep -qE "\"stopped\":\"($idle)" "$summary"; then
            busy="$busy $k"
        elif [ "$(due_at "$summary")" -lt "$next_round_ends" ]; then
            busy="$busy $k"  # idle now, but a deferred URL is due within the next slice
        fi
    done
    echo "round $round: delivered ${delivered:-0} files; busy shards:${busy:- none}; failed:${failed:- none}" >&2
    if [ -n "$failed" ]; then
        echo "$0: shard(s)$failed failed in round $round (see $fleet/logs/ or the runner's output)" >&2
        exit 1
    fi
    if [ -z "$delivery_ok" ]; then
        echo "$0: delivery failed in round $round (above); the outboxes are kept" >&2
        exit 1
    fi
    if [ -z "$busy" ] && [ "${delivered:-0}" = 0 ]; then
        echo "fleet done after $round rounds: nothing due before the next round" >&2
        exit 0
    fi
    if [ "$round" -ge "${ROUNDS:-100}" ]; then
        echo "fleet stopped after ROUNDS=$round rounds with work left; run again to continue" >&2
        exit 0
    fi
done
