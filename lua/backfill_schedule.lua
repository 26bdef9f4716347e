#!lua
-- backfill_schedule: queue slots of a schedule's timing in a past range (BackfillSchedule).
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] the schedule record <prefix>:{<ns>}:s:<id>
-- KEYS[6] the schedule's backfill set (zset slot ms -> slot ms) <prefix>:{<ns>}:bf:<id>
-- ARGV[3] id: the schedule id   ARGV[4] rev: the revision the slots were computed from
-- ARGV[5] max_waiting: most slots that may wait in the set
-- ARGV[6..] slots: the slots, epoch ms (at most 1,000, oldest first)
-- Returns { "ok", added (slots not already waiting), waiting } | { "missing" }
--   | { "paused" } | { "completed" } | { "moved" } (the timing changed: recompute)
--   | { "full", waiting }
--
-- Invariant 1 (docs/DESIGN.md): the slots wait in the schedule's own set; the record
-- keeps the earliest (backfill_ms) and the due index is re-derived from it here
-- (sched_due_at). claim_due hands them out one per claim, oldest first, with the
-- occurrence id the timing gives each slot (occurrence_id of the slot and the
-- revision at the claim). DeleteSchedule deletes the set with the record. Invariant 8:
-- every refusal writes nothing. Invariant 3: at most 1,000 slots per call (the caller
-- checks), one ZADD.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
local id, key, bf = ARGV[3], KEYS[5], KEYS[6]
local r = sched_load(key)
if is_error(r) then return r end
if r == nil then return { 'missing' } end
if r.status ~= 'active' then return { r.status } end
if string.format('%d', r.rev) ~= ARGV[4] then return { 'moved' } end
local waiting = redis.call('ZCARD', bf)
local n = #ARGV - 5
if waiting + n > tonumber(ARGV[5]) then return { 'full', waiting } end
local args = {}
for i = 6, #ARGV do
  args[#args + 1] = ARGV[i]
  args[#args + 1] = ARGV[i]
end
local added = 0
if n > 0 then added = redis.call('ZADD', bf, unpack(args)) end
local first = redis.call('ZRANGE', bf, 0, 0, 'WITHSCORES')
local was = sched_indexed(r)
r.backfill_ms = tonumber(first[2]) or ''
sched_save(key, r)
sched_reindex(KEYS[1], KEYS[4], id, r, was)
return { 'ok', added, waiting + added }
