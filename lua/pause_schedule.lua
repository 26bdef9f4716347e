-- pause_schedule: stop a schedule from firing until it is resumed.
--
-- KEYS[1] due index   <prefix>:{<ns>}:due      KEYS[2] schedule record <prefix>:{<ns>}:s:<id>
-- KEYS[3] id listing  <prefix>:{<ns>}:ids      KEYS[4] namespace meta <prefix>:{<ns>}:meta
-- ARGV[1] id
-- Returns: {} when the schedule does not exist, else the fields of the paused schedule.
--
-- Invariant 1: the status change and the removal from the due index happen together,
-- so a paused schedule can never be claimed. Pausing twice is a no-op. Invariant 5:
-- refused in a namespace that needs Migrate; keeps the meta `indexed` count.

local refused = schema_guard(KEYS[4], KEYS[3])
if refused then return refused end
local r = sched_load(KEYS[2])
if s_is_error(r) then return r end
if r == nil then return {} end
count_index(KEYS[4], sched_indexed(r), false)
if r.status ~= 'paused' then
  r.status, r.next_ms, r.follow_ms = 'paused', '', ''
  r.updated_ms = now_ms()
  sched_save(KEYS[2], r)
end
redis.call('ZREM', KEYS[1], ARGV[1])
return sched_fields(ARGV[1], r)
