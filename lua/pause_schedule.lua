-- pause_schedule: stop a schedule from firing until it is resumed.
--
-- KEYS[1] due index   <prefix>:{<ns>}:due      KEYS[2] schedule hash <prefix>:{<ns>}:s:<id>
-- ARGV[1] id
-- Returns: {} when the schedule does not exist, else HGETALL of the paused schedule.
--
-- Invariant 1: the status change and the removal from the due index happen together,
-- so a paused schedule can never be claimed. Pausing twice is a no-op.

if redis.call('EXISTS', KEYS[2]) == 0 then return {} end
local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
if redis.call('HGET', KEYS[2], 'status') ~= 'paused' then
  redis.call('HSET', KEYS[2], 'status', 'paused', 'next_ms', '', 'follow_ms', '', 'updated_ms', now)
end
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('HGETALL', KEYS[2])
