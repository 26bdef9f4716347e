#!lua flags=allow-oom
-- pause_schedule: stop a schedule from firing until it is resumed.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] the schedule record <prefix>:{<ns>}:s:<id>
-- ARGV[3] id: the schedule id   ARGV[4] note: the pause note ("" none), shown until resumed
-- Returns: {} when the schedule does not exist, else the fields of the paused schedule
-- (lib/schedule.lua sched_reply).
--
-- Invariant 1 (docs/DESIGN.md): the status change and the removal from the due index happen together,
-- so a paused schedule can never be claimed. Pausing twice is a no-op, except that a
-- note given the second time replaces the first. A slot held back by
-- OVERLAP_POLICY_BUFFER_ONE is dropped (counted in skipped_overlap): a resumed schedule
-- does not make up runs missed while paused; so is a triggered occurrence not yet
-- claimed. Invariant 5:
-- refused in a namespace that needs Migrate; keeps the meta `indexed` count.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
local r = sched_load(KEYS[5])
if is_error(r) then return r end
if r == nil then return {} end
count_index(KEYS[1], sched_indexed(r), false)
if r.status ~= 'paused' then
  r.status, r.next_ms, r.follow_ms = 'paused', '', ''
  if r.buffered_ms ~= '' then
    r.buffered_ms = ''
    r.sk_overlap = r.sk_overlap + 1
  end
  r.trigger_ms = '' -- a triggered occurrence not yet claimed is dropped too
  r.pause_note = ARGV[4]
  r.updated_ms = now_ms()
  sched_save(KEYS[5], r)
elseif ARGV[4] ~= '' and ARGV[4] ~= r.pause_note then
  r.pause_note = ARGV[4]
  r.updated_ms = now_ms()
  sched_save(KEYS[5], r)
end
redis.call('ZREM', KEYS[4], ARGV[3])
redis.call('ZREM', sched_target_index(KEYS[4]), ARGV[3])
return sched_reply(ARGV[3], r)
