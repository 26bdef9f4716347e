#!lua
-- resume_schedule: make a paused schedule active again, next run computed from now.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] the schedule record <prefix>:{<ns>}:s:<id>
-- ARGV[3] id: the schedule id   ARGV[4] rev: the revision the caller computed from
-- ARGV[5] next_ms: next run ms computed from now ("" = never)
-- ARGV[6] follow: follow ms ("" | "end")
-- Returns: {} when missing; { "moved" } when rev changed since the caller read it (the
-- caller re-reads and retries); else { "ok", fields (lib/schedule.lua
-- sched_reply)... }.
--
-- Invariant 2 (docs/DESIGN.md): optimistic compare-and-set on rev, so a next run computed from a stale
-- timing is never written. Invariant 1: status and index change together.
-- Resuming a schedule that is not paused changes nothing. Invariant 5: refused in a
-- namespace that needs Migrate; keeps the meta `indexed` count.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
local r = sched_load(KEYS[5])
if is_error(r) then return r end
if r == nil then return {} end
if string.format('%d', r.rev) ~= ARGV[4] then return { 'moved' } end
if r.status == 'paused' then
  r.updated_ms = now_ms()
  r.pause_note = '' -- the pause note is shown until resumed
  if ARGV[5] == '' or (r.limit > 0 and r.runs >= r.limit) then
    r.status, r.next_ms, r.follow_ms = 'completed', '', ''
    sched_index_put(KEYS[4], ARGV[3], r)
  else
    local follow = ARGV[6]
    if follow ~= 'end' then follow = tonumber(follow) or '' end
    r.status, r.next_ms, r.follow_ms = 'active', tonumber(ARGV[5]), follow
    sched_index_put(KEYS[4], ARGV[3], r) -- (a target schedule: its own index)
    count_index(KEYS[1], false, true)
  end
  sched_save(KEYS[5], r)
end
return push_fields({ 'ok' }, ARGV[3], r)
