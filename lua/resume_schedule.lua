-- resume_schedule: make a paused schedule active again, next run computed from now.
--
-- KEYS[1] due index   <prefix>:{<ns>}:due      KEYS[2] schedule hash <prefix>:{<ns>}:s:<id>
-- KEYS[3] id listing  <prefix>:{<ns>}:ids      KEYS[4] namespace meta <prefix>:{<ns>}:meta
-- ARGV[1] id   ARGV[2] rev the caller computed from
-- ARGV[3] next run ms computed from now ("" = never)   ARGV[4] follow ms ("" | "end")
-- Returns: {} when missing; { "moved" } when rev changed since the caller read it (the
-- caller re-reads and retries); else { "ok", HGETALL... }.
--
-- Invariant 2: optimistic compare-and-set on rev, so a next run computed from a stale
-- timing is never written. Invariant 1: status and index change together.
-- Resuming a schedule that is not paused changes nothing. Invariant 5: refused in a
-- namespace that needs Migrate; keeps the meta `indexed` count.

local refused = schema_guard(KEYS[4], KEYS[3])
if refused then return refused end
if redis.call('EXISTS', KEYS[2]) == 0 then return {} end
local h = redis.call('HMGET', KEYS[2], 'rev', 'status', 'runs', 'limit')
if h[1] ~= ARGV[2] then return { 'moved' } end
if h[2] == 'paused' then
  local now_t = redis.call('TIME')
  local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
  local runs, limit = tonumber(h[3]) or 0, tonumber(h[4]) or 0
  if ARGV[3] == '' or (limit > 0 and runs >= limit) then
    redis.call('HSET', KEYS[2], 'status', 'completed', 'next_ms', '', 'follow_ms', '', 'updated_ms', now)
    redis.call('ZREM', KEYS[1], ARGV[1])
  else
    redis.call('HSET', KEYS[2], 'status', 'active', 'next_ms', ARGV[3], 'follow_ms', ARGV[4], 'updated_ms', now)
    redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
    count_index(KEYS[4], false, true)
  end
end
local out = { 'ok' }
local fields = redis.call('HGETALL', KEYS[2])
for i = 1, #fields do out[#out + 1] = fields[i] end
return out
