#!lua
-- schedule_gauges: a namespace's schedule gauges for /metrics, in O(log N).
--
-- KEYS[1] meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids   KEYS[3] due index <prefix>:{<ns>}:due
-- KEYS[4] target index <prefix>:{<ns>}:due:t (target schedules, counted with the others;
--         an overdue one is a slot the dispatcher has not enqueued)
-- ARGV[1] overdue_ms: overdue after, in ms (--overdue-after)
-- Returns { schedules stored, active schedules (the due index's size), active
--           schedules due before Redis now - ARGV[1] }.
--   stored: meta `listed` (schema 3's listing keeps it), else the size of an older
--           schema's listing set.
--   overdue: a claim re-scores the entry it hands out to the next run, so an entry
--            scored that far in the past has not been claimed.
--
-- Read-only. HGET, TYPE, ZCARD / SCARD and ZCOUNT: O(log N), whatever the
-- namespace holds (invariant 3 in docs/DESIGN.md). Invariant 7: now is Redis TIME.

local now = now_ms()
local stored = tonumber(redis.call('HGET', KEYS[1], 'listed'))
if stored == nil then
  local listing = redis.call('TYPE', KEYS[2])['ok']
  if listing == 'set' then stored = redis.call('SCARD', KEYS[2])
  elseif listing == 'zset' then stored = redis.call('ZCARD', KEYS[2])
  else stored = 0 end
end
local active = redis.call('ZCARD', KEYS[3]) + redis.call('ZCARD', KEYS[4])
local before = '(' .. (now - tonumber(ARGV[1]))
local overdue = redis.call('ZCOUNT', KEYS[3], '-inf', before)
  + redis.call('ZCOUNT', KEYS[4], '-inf', before)
return { stored, active, overdue }
