#!lua
-- trigger_schedule: an occurrence of a schedule now, outside its timing (TriggerSchedule).
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] the schedule record <prefix>:{<ns>}:s:<id>
-- ARGV[3] id: the schedule id   ARGV[4] ignore_overlap: "1" to ignore the overlap policy
-- ARGV[5] namespace: the namespace (for the occurrence id)
-- ARGV[6] occurrence_prefix: occurrence record prefix <prefix>:{<ns>}:o:
-- Returns { "ok", occurrence id, due ms, target (1: a target schedule, whose
--   occurrence the dispatcher enqueues as a job; 0) } | { "missing" } | { "paused" } | { "completed" }
--   | { "pending", occurrence id } (one triggered occurrence already waits for a claim)
--   | { "overlap", outstanding occurrence id } (SKIP or BUFFER_ONE, not ignored)
--
-- Invariant 1 (docs/DESIGN.md): the triggered occurrence lives on the schedule record
-- (trigger_ms, trigger_rev: at most one per schedule, so DeleteSchedule removes it with
-- the record) and the due index entry is re-derived from the record here
-- (sched_due_at); the next run is not moved. The next claim hands it out
-- (claim_due.lua) with the occurrence id returned here: occurrence_id(..., 'trigger')
-- of (namespace, id, due ms, revision now), never the id of a slot of the timing.
-- Invariant 8: every refusal writes nothing. Invariant 5: refused in a namespace that
-- needs Migrate. O(log N).

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
local id, key = ARGV[3], KEYS[5]
local r = sched_load(key)
if is_error(r) then return r end
if r == nil then return { 'missing' } end
if r.status ~= 'active' then return { r.status } end
if r.trigger_ms ~= '' then
  return { 'pending', occurrence_id(ARGV[5], id, r.trigger_ms, r.trigger_rev, 'trigger') }
end
local now = now_ms()
if ARGV[4] ~= '1' and r.overlap ~= 'allow_all' and r.outstanding ~= '' and r.target == '' then
  local h = redis.call('HMGET', ARGV[6] .. r.outstanding, 'state', 'lease_until', 'attempt',
    's.max_attempts')
  local max = tonumber(h[4]) or 0
  local final = max > 0 and (tonumber(h[2]) or 0) <= now and (tonumber(h[3]) or 0) >= max
  if h[1] == 'leased' and not final then return { 'overlap', r.outstanding } end
end
-- A trigger in the same millisecond as a claimed earlier one would share its id: the
-- later one moves on by a millisecond (bounded: at most a few records exist).
local occ = occurrence_id(ARGV[5], id, now, r.rev, 'trigger')
for _ = 1, 8 do
  if redis.call('EXISTS', ARGV[6] .. occ) == 0 then break end
  now = now + 1
  occ = occurrence_id(ARGV[5], id, now, r.rev, 'trigger')
end
local was = sched_indexed(r)
r.trigger_ms, r.trigger_rev = now, r.rev
sched_save(key, r)
sched_reindex(KEYS[1], KEYS[4], id, r, was)
local target = 0
if r.target ~= '' then target = 1 end
return { 'ok', occ, now, target }
