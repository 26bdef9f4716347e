# Sourced by the profile scripts (claim_ack.sh, record_write.sh).
#
# start_scratch_redis LOG COMMAND...: runs COMMAND (a redis-server, or one wrapped in
# valgrind) on a free port of 127.0.0.1 with nothing saved, its output in LOG, until
# the sourcing script exits; sets `port` and returns once the server answers PING.
start_scratch_redis() {
  local log=$1
  shift
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$@" --port "$port" --bind 127.0.0.1 --save '' --appendonly no > "$log" 2>&1 &
  scratch_redis_pid=$!
  trap 'kill "$scratch_redis_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 100); do
    redis-cli -p "$port" ping > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "the scratch redis-server did not answer on port $port (its output: $log)" >&2
  return 1
}
