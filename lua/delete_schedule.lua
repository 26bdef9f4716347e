#!lua flags=allow-oom
-- delete_schedule: remove a schedule, its due index entry and its listing entry.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] the schedule record <prefix>:{<ns>}:s:<id>
-- KEYS[6] its backfill set <prefix>:{<ns>}:bf:<id> (BackfillSchedule)
-- KEYS[7] its recent runs <prefix>:{<ns>}:rr:<id>
-- ARGV[3] id: the schedule id
-- Returns 1 if the schedule existed, else 0.
--
-- Invariant 1 (docs/DESIGN.md): the record, its backfill set and both derived entries go together; a claim that still
-- met a dangling id would remove it anyway. Invariant 5: refused in a namespace that
-- needs Migrate; keeps the meta `indexed` count. A key holding something other than a
-- schedule record is reported (DUEQ_CORRUPT) and left, not deleted.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
local r = sched_load(KEYS[5])
if is_error(r) then return r end
count_index(KEYS[1], sched_indexed(r), false)
local existed = redis.call('DEL', KEYS[5])
redis.call('DEL', KEYS[6], KEYS[7]) -- its backfill set and recent runs, if any
redis.call('ZREM', KEYS[4], ARGV[3])
redis.call('ZREM', sched_target_index(KEYS[4]), ARGV[3])
listing_remove(listing_of(KEYS[3], ARGV[2], KEYS[1]), ARGV[3])
return existed
