#!lua
-- set_schedule_next_run: set or postpone a schedule's next run without touching its
-- timing (SetScheduleNextRun, issue 36).
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index <prefix>:{<ns>}:due (a target schedule's entry goes in <due>:t)
-- KEYS[5] the schedule record <prefix>:{<ns>}:s:<id>
-- ARGV[3] id: the schedule id   ARGV[4] rev: the revision the caller computed follow from
-- ARGV[5] expected_rev: the caller's expected revision ("0" = not checked)
-- ARGV[6] next_ms: the new next run
-- ARGV[7] follow: the timing's first slot after next_ms (ms, or "end" when none)
-- ARGV[8] max_past_ms: how far before now next_ms may lie when the schedule has no
--   catch-up window (with one, the window is the bound)
-- Returns: {} when missing | { "revision", current rev } (expected_rev differs)
--   | { "moved" } (rev changed since the caller read it: it reads again and retries)
--   | { "paused" } | { "completed", "run_limit" | "end_time" }
--   | { "no_next" } (active, but its last slot is buffered behind an outstanding run)
--   | { "too_early", bound ms, "window" | "max_past" | "last_run" | "start_time" }
--   | { "after_end", end ms } | { "ok", fields (lib/schedule.lua sched_reply)... }
--
-- The next run becomes next_ms and the slot after it (follow_ms) the timing's first
-- slot after next_ms, for `every` as for cron: lib/claim.lua hands next_ms out as a
-- slot (its own occurrence id: that of (namespace, id, next_ms, revision)) and then
-- continues at follow_ms, whether next_ms lies on the interval's grid or not. The
-- revision, run count and last run are not touched; an outstanding or buffered
-- occurrence, a triggered one and backfilled slots stay as they are.
-- * 2 (one transition, one script): a claim (claim_due.lua, dispatch_due.lua) and
--   this script are each atomic on the record, and next_ms must lie after the last
--   run (last_ms, the claim time of the last hand-out, never before its due time), so
--   a slot already handed out is never handed out again. follow was computed from the
--   timing of ARGV[4]: written only under that revision (compare-and-set).
-- * 1 (derived index): the entry moves in whichever index the record belongs in
--   (sched_reindex: a target schedule's is the target index).
-- * 8: every refusal writes nothing. 5: refused in a namespace that needs Migrate.
--   O(log N).

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
local id, key = ARGV[3], KEYS[5]
local r = sched_load(key)
if is_error(r) then return r end
if r == nil then return {} end
local rev = string.format('%d', r.rev)
if ARGV[5] ~= '0' and ARGV[5] ~= rev then return { 'revision', rev } end
if rev ~= ARGV[4] then return { 'moved' } end
if r.status == 'paused' then return { 'paused' } end
local pending = 0
if r.buffered_ms ~= '' then pending = 1 end
if r.status == 'completed' or (r.limit > 0 and r.runs + pending >= r.limit) then
  if r.limit > 0 and r.runs + pending >= r.limit then return { 'completed', 'run_limit' } end
  return { 'completed', 'end_time' }
end
if r.next_ms == '' then return { 'no_next' } end
local now = now_ms()
local next_ms = tonumber(ARGV[6])
local bound, why = now - tonumber(ARGV[8]), 'max_past'
if r.window_ms ~= '' then bound, why = now - r.window_ms, 'window' end
if r.last_ms ~= '' and r.last_ms >= bound then bound, why = r.last_ms + 1, 'last_run' end
if r.start_ms ~= '' and r.start_ms > bound then bound, why = r.start_ms, 'start_time' end
if next_ms < bound then return { 'too_early', bound, why } end
if r.end_ms ~= '' and next_ms > r.end_ms then return { 'after_end', r.end_ms } end
local follow = ARGV[7]
if follow ~= 'end' then follow = tonumber(follow) or '' end
local was = sched_indexed(r)
r.next_ms, r.follow_ms, r.updated_ms = next_ms, follow, now
sched_save(key, r)
sched_reindex(KEYS[1], KEYS[4], id, r, was)
return push_fields({ 'ok' }, id, r)
