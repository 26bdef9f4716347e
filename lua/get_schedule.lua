#!lua flags=allow-oom
-- get_schedule: read one schedule.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] the schedule record <prefix>:{<ns>}:s:<id>
-- KEYS[5] its recent runs <prefix>:{<ns>}:rr:<id> (lib/schedule.lua runs_push)
-- ARGV[3] id: the schedule id
-- Returns {} when missing, else { n, n recent run entries (newest first), the
--   schedule's fields (lib/schedule.lua sched_reply)... }.
--
-- Read-only. Invariant 5 (docs/DESIGN.md): refused in a namespace that needs Migrate, rather than
-- answering NOT_FOUND for a record kept in an older layout.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
local r = sched_load(KEYS[4])
if is_error(r) then return r end
if r == nil then return {} end
local runs = redis.call('LRANGE', KEYS[5], 0, RUNS_KEPT - 1)
local out = { #runs }
for i = 1, #runs do out[#out + 1] = runs[i] end
return push_fields(out, ARGV[3], r)
