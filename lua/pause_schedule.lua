-- pause_schedule: stop a schedule from firing until it is resumed.
--
-- KEYS[1] due index   <prefix>:{<ns>}:due      KEYS[2] schedule hash <prefix>:{<ns>}:s:<id>
-- KEYS[3] id listing  <prefix>:{<ns>}:ids      KEYS[4] namespace meta <prefix>:{<ns>}:meta
-- ARGV[1] id
-- Returns: {} when the schedule does not exist, else HGETALL of the paused schedule.
--
-- Invariant 1: the status change and the removal from the due index happen together,
-- so a paused schedule can never be claimed. Pausing twice is a no-op. Invariant 5:
-- refused in a namespace that needs Migrate; keeps the meta `indexed` count.

local refused = schema_guard(KEYS[4], KEYS[3])
if refused then return refused end
if redis.call('EXISTS', KEYS[2]) == 0 then return {} end
local before = redis.call('HMGET', KEYS[2], 'status', 'next_ms')
count_index(KEYS[4], indexed(before[1], before[2]), false)
local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
if redis.call('HGET', KEYS[2], 'status') ~= 'paused' then
  redis.call('HSET', KEYS[2], 'status', 'paused', 'next_ms', '', 'follow_ms', '', 'updated_ms', now)
end
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('HGETALL', KEYS[2])
