#!/usr/bin/env bash
# Where the service's CPU goes under the consume family's ClaimJob+acks drain:
# runs `dueq-bench --only consume`, records the `dueq serve` process with perf
# (DWARF call graphs) for a window inside that drain, then prints the CPU by
# binary (dueq, the kernel, libc) and the inclusive share of the parts of a
# request it names. Needs perf and a release build (cargo build --release --bins).
#
# usage: tools/profile/service_perf.sh [seconds after the service starts, default 21] [seconds recorded, default 5]
# The default window falls inside the ClaimJob+acks drain on a 2-core box (it
# follows the ClaimJob+AckJob drain of the 100k pre-filled jobs); the bench's
# ClaimJob+acks row is printed with the profile, to compare.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=${1:-21}
len=${2:-5}
out=$(mktemp -d)
target/release/dueq-bench --only consume --prefill 100k --dueq-bin target/release/dueq \
  > "$out/bench.txt" 2> "$out/bench.err" &
bench=$!
pid=
for _ in $(seq 200); do
  pid=$(pgrep -f "target/release/dueq serve" | head -1 || true)
  [ -n "$pid" ] && break
  sleep 0.1
done
[ -n "$pid" ] || { echo "the bench started no dueq serve" >&2; exit 1; }
sleep "$start"
perf record -F 199 --call-graph dwarf,16384 -p "$pid" -o "$out/perf.data" -- sleep "$len" \
  > "$out/perf.log" 2>&1
wait "$bench"
grep -E "^ClaimJob\+acks" "$out/bench.txt"
echo "service CPU by binary:"
perf report -i "$out/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null | grep '%'
echo "inclusive shares:"
perf report -i "$out/perf.data" --children --sort symbol --stdio -g none 2>/dev/null \
  | grep -E '\] (entry_SYSCALL_64_after_hwframe|h2::proto::connection::Connection<T,P,B>::poll|dueq::layers::Concerns::answered::\{\{closure\}\}|dueq::jobs::claim_group::flush::\{\{closure\}\}|_int_malloc|_int_free|malloc|cfree@GLIBC_2.2.5|__memmove_avx512_unaligned_erms|finish_task_switch.isra.0) ' \
  | sed -E 's/ {2,}/  /g' | cut -c1-120
echo "perf data: $out/perf.data"
