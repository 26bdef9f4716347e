#!/usr/bin/env bash
# Prints what one lease change of a job record costs inside Redis's Lua, for the
# whole-record layout dueq keeps and for the split layouts issue 35 proposed
# (tools/profile/record_write.lua says what each variant does): nanoseconds per
# change, the median of 7 interleaved rounds of 200,000 changes each, on a
# redis-server of its own.
#
# usage: tools/profile/record_write.sh [redis-server binary] [changes per round]
set -euo pipefail
cd "$(dirname "$0")"
redis_bin=${1:-redis-server}
changes=${2:-200000}
source ./scratch_redis.sh
start_scratch_redis /dev/null "$redis_bin" --busy-reply-threshold 60000
variants="getset whole front tail tail_claim"
declare -A runs
for _ in 1 2 3 4 5 6 7; do
  for v in $variants; do
    got=$(redis-cli -p "$port" --eval record_write.lua , "$changes" "$v")
    [[ $got =~ ^[0-9]+$ ]] || { echo "$v: $got" >&2; exit 1; }
    runs[$v]+="$got "
  done
done
for v in $variants; do
  median=$(printf '%s\n' ${runs[$v]} | sort -n | sed -n 4p)
  printf '%-11s %6s ns per change   (rounds: %s)\n' "$v" "$median" "${runs[$v]% }"
done
