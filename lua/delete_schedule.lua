-- delete_schedule: remove a schedule, its due index entry and its listing entry.
--
-- KEYS[1] due index <prefix>:{<ns>}:due   KEYS[2] id listing <prefix>:{<ns>}:ids
-- KEYS[3] schedule record <prefix>:{<ns>}:s:<id>   KEYS[4] namespace meta <prefix>:{<ns>}:meta
-- ARGV[1] id
-- Returns 1 if the schedule existed, else 0.
--
-- Invariant 1: the record and both derived entries go together; a claim that still
-- met a dangling id would remove it anyway. Invariant 5: refused in a namespace that
-- needs Migrate; keeps the meta `indexed` count. A key holding something other than a
-- schedule record is reported (DUEQ_CORRUPT) and left, not deleted.

local refused = schema_guard(KEYS[4], KEYS[2])
if refused then return refused end
local r = sched_load(KEYS[3])
if s_is_error(r) then return r end
count_index(KEYS[4], sched_indexed(r), false)
local existed = redis.call('DEL', KEYS[3])
redis.call('ZREM', KEYS[1], ARGV[1])
listing_remove(KEYS[2], KEYS[4], ARGV[1])
return existed
