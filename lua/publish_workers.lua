#!lua
-- publish_workers: one replica's worker sessions in a namespace (issue 33): writes
-- the sessions it serves and removes those that ended.
--
-- KEYS[1] the worker sessions (hash)   <prefix>:{<ns>}:meta:workers
-- ARGV[1] ttl_ms: the hash's ttl, the readers' staleness bound: a namespace whose
--         replicas all stop publishing loses the hash with its last session
-- ARGV[2..] session{field, record}: groups of 2: the session id (replica id, then
--           a counter), and its record as the service encodes it ("" to remove it)
-- Returns the number of sessions written.
--
-- Each value stored is "<now ms>\n<record>": when the replica last published it, by
-- the Redis clock (invariant 7), so readers decide staleness against the same clock.
-- O(sessions): the service sends at most 1,000 per call (its bound per replica and
-- namespace), one call per namespace per refresh interval, none for a namespace
-- without sessions. Not allow-oom: a full Redis keeps the last published state,
-- which readers age out.

local key, ttl = KEYS[1], ARGV[1]
local now = now_ms()
local written = 0
for i = 2, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', key, ARGV[i])
  else
    redis.call('HSET', key, ARGV[i], now .. '\n' .. ARGV[i + 1])
    written = written + 1
  end
end
if redis.call('EXISTS', key) == 1 then redis.call('PEXPIRE', key, ttl) end
return written
