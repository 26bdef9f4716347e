-- get_schedule: read one schedule.
--
-- KEYS[1] schedule record <prefix>:{<ns>}:s:<id>   KEYS[2] namespace meta
-- KEYS[3] id listing
-- ARGV[1] id
-- Returns {} when missing, else the schedule's fields.
--
-- Read-only. Invariant 5: refused in a namespace that needs Migrate, rather than
-- answering NOT_FOUND for a record kept in an older layout.

local refused = schema_guard(KEYS[2], KEYS[3])
if refused then return refused end
local r = sched_load(KEYS[1])
if s_is_error(r) then return r end
if r == nil then return {} end
return sched_fields(ARGV[1], r)
