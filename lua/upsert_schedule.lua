#!lua
-- upsert_schedule: create a schedule or replace its definition.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index (zset id -> next run ms) <prefix>:{<ns>}:due
-- KEYS[5] the schedule record (packed, lib/schedule.lua) <prefix>:{<ns>}:s:<id>
-- ARGV[3]  id: the schedule id
-- ARGV[4]  kind: "cron" | "every"
-- ARGV[5]  cron: cron expression ("" for every)
-- ARGV[6]  every_ms: every in ms ("" for cron)
-- ARGV[7]  tz: timezone
-- ARGV[8]  start_ms: start ms ("" none)   ARGV[9] end_ms: end ms ("" none)
-- ARGV[10] limit: run limit (0 = none)
-- ARGV[11] job_name: job name   ARGV[12] payload: payload (bytes)
-- ARGV[13] headers: headers (JSON object)
-- ARGV[14] paused: "1" to create paused
-- ARGV[15] next_ms: next run ms computed by the caller from the new timing ("" = never)
-- ARGV[16] follow: follow ms, the cron slot after ARGV[15] ("" unknown, "end" none)
-- ARGV[17] schema: schema version of this layout (written to a new namespace's meta)
-- ARGV[18] max_schedules: most schedules the namespace may hold (0 = no limit)
-- ARGV[19] catchup: catch-up policy "one" | "skip" | "all"
-- ARGV[20] catchup_limit: catch-up limit (0 none)
-- ARGV[21] window_ms: catch-up window ms ("" none). Policies are not timing: they never bump rev
--   and never move the next run; the skip counters are kept.
-- ARGV[22] offset_ms: every's offset ms ("" none): timing, like the fields before ARGV[11]
-- ARGV[23] overlap: overlap policy "allow_all" | "skip" | "buffer_one"
-- ARGV[24] max_attempts: max attempts
--   of a leased occurrence (0 unlimited). Policies: the outstanding occurrence and a
--   buffered slot are kept (a buffered slot is handed out when released, whatever the
--   policy is by then).
-- ARGV[25] jitter_ms: jitter ms (0 none): a policy; the index entry moves with it.
-- ARGV[26] target: the EnqueueTarget as JSON ("" none; lib/schedule.lua position 17):
--   not timing. A target schedule is indexed in the target index (<due>:t), which only
--   dispatch_due reads; switching the target moves the entry (sched_index_put).
-- Returns: { created (0|1), fields of the stored schedule (lib/schedule.lua
--   sched_reply)... }; a create beyond ARGV[18] is refused with DUEQ_QUOTA
--   "schedules <limit>" and writes nothing.
--
-- Invariant 1 (docs/DESIGN.md: canonical record, derived index): the status/next run written to the
-- record and the due index entry are written together, here. The caller's next run
-- is used only when the timing changed (or on create); otherwise runtime state
-- (status, run count, last run, next run, create time) is kept. A timing change bumps
-- `rev`, which makes every claim hint computed from the old timing fail its check in
-- claim_due. Any upsert also re-asserts the index entry, repairing one that went
-- missing. Invariant 5: refused (lib/guard.lua) in a namespace that needs Migrate;
-- keeps the meta `indexed` count. Invariant 8: a key holding something other than a
-- schedule record is reported (DUEQ_CORRUPT) and left as it is. The quota is
-- counted by meta `listed` (lib/schedule.lua), which every create and delete keeps:
-- O(1), and right under deletes, since the same scripts write both.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
local id, key = ARGV[3], KEYS[5]
local r = sched_load(key)
if is_error(r) then return r end
local now = now_ms()
local kind, cron, every = ARGV[4], ARGV[5], tonumber(ARGV[6]) or ''
local tz, start_ms, end_ms = ARGV[7], tonumber(ARGV[8]) or '', tonumber(ARGV[9]) or ''
local limit = tonumber(ARGV[10]) or 0
local offset_ms = tonumber(ARGV[22]) or ''
local was = sched_indexed(r)
-- Status and next run from the caller's next run and the run count.
local function schedule_from_timing()
  if ARGV[15] == '' or (limit > 0 and r.runs >= limit) then
    r.status, r.next_ms, r.follow_ms = 'completed', '', ''
  else
    local follow = ARGV[16]
    if follow ~= 'end' then follow = tonumber(follow) or '' end
    r.status, r.next_ms, r.follow_ms = 'active', tonumber(ARGV[15]), follow
  end
end
local quota = tonumber(ARGV[18]) or 0
if r == nil and quota > 0 and (tonumber(redis.call('HGET', KEYS[1], 'listed')) or 0) >= quota then
  return redis.error_reply('DUEQ_QUOTA schedules ' .. quota)
end
redis.call('HSETNX', KEYS[1], 'schema', ARGV[17])
local created = 0
local timing_changed = true
if r == nil then
  created = 1
  r = { rev = 1, runs = 0, last_ms = '', created_ms = now, key = key }
  if ARGV[14] == '1' then
    r.status, r.next_ms, r.follow_ms = 'paused', '', ''
  end
else
  timing_changed = sched_new_timing(r, kind, cron, every, tz, start_ms, end_ms, limit)
    or (r.offset_ms or '') ~= offset_ms
  if timing_changed then r.rev = r.rev + 1 end
end
r.kind, r.cron, r.every_ms, r.tz, r.start_ms, r.end_ms, r.limit = kind, cron, every, tz,
  start_ms, end_ms, limit
r.job_name, r.payload, r.headers, r.updated_ms = ARGV[11], ARGV[12], ARGV[13], now
r.catchup, r.catchup_limit, r.window_ms = ARGV[19], tonumber(ARGV[20]) or 0,
  tonumber(ARGV[21]) or ''
r.offset_ms = offset_ms
r.overlap, r.max_attempts = ARGV[23], tonumber(ARGV[24]) or 0
r.jitter_ms = tonumber(ARGV[25]) or 0
r.target = ARGV[26]
if timing_changed and r.status ~= 'paused' then schedule_from_timing() end
sched_save(key, r)
local is = sched_index_put(KEYS[4], id, r) ~= ''
listing_add(listing_of(KEYS[3], ARGV[2], KEYS[1]), id)
count_index(KEYS[1], was, is)
return push_fields({ created }, id, r)
