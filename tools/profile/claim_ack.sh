#!/usr/bin/env bash
# Counts the instructions Redis spends per claimed and acked job: runs the library
# test that drains 3,200 jobs with claims of 16 carrying the previous acks
# (store::ops::claim_jobs::tests::a_drain_with_carried_acks_hands_out_and_acks_each_job_once)
# against a redis-server under callgrind, which the test zeroes after the pre-fill
# and dumps after the drain, then prints the total and the top functions.
#
# usage: tools/profile/claim_ack.sh [redis-server binary] [jobs per claim, default 16]
# With 1 job per claim, the count per job is a whole call's: its fixed cost shows.
# A redis-server built from source (make in the release tarball) names the Lua and
# cmsgpack functions; a stripped one gives the totals only. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/../.."
redis_bin=${1:-redis-server}
batch=${2:-16}
jobs=3200 # the test's JOBS
out=$(mktemp -d)
source tools/profile/scratch_redis.sh
start_scratch_redis "$out/valgrind.log" \
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" "$redis_bin" --dir "$out"
DUEQ_PROFILE_REDIS="redis://127.0.0.1:$port" DUEQ_PROFILE_BATCH="$batch" cargo test --lib --quiet \
  a_drain_with_carried_acks_hands_out_and_acks_each_job_once
dump=$(ls "$out"/callgrind.out.* | head -1)
total=$(callgrind_annotate --auto=no "$dump" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
echo "instructions in the drain: $total, per claimed and acked job: $((total / jobs)) ($batch per claim)"
# Inclusive costs of the parts docs/performance.md names ("Where a job's Redis time goes").
callgrind_annotate --auto=no --inclusive=yes --threshold=100 "$dump" | grep -E \
  ':(luaRedisGenericCommand|mp_pack|mp_unpack_limit|luaS_newlstr|luaC_step|zaddGenericCommand) ' || true
echo "callgrind output: $dump"
