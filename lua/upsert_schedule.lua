-- upsert_schedule: create a schedule or replace its definition.
--
-- KEYS[1] due index   (zset id -> next run ms)    <prefix>:{<ns>}:due
-- KEYS[2] id listing  <prefix>:{<ns>}:ids (schema 3 lists in keys derived from it:
--         lib/schedule.lua listing_add)
-- KEYS[3] schedule    (packed record, lib/schedule.lua) <prefix>:{<ns>}:s:<id>
-- KEYS[4] namespace meta (hash)                    <prefix>:{<ns>}:meta
-- ARGV[1]  id
-- ARGV[2]  kind: "cron" | "every"
-- ARGV[3]  cron expression ("" for every)
-- ARGV[4]  every in ms ("" for cron)
-- ARGV[5]  timezone
-- ARGV[6]  start ms ("" none)      ARGV[7] end ms ("" none)
-- ARGV[8]  run limit (0 = none)
-- ARGV[9]  job name                ARGV[10] payload (bytes)
-- ARGV[11] headers (JSON object)
-- ARGV[12] "1" to create paused
-- ARGV[13] next run ms computed by the caller from the new timing ("" = never)
-- ARGV[14] follow ms: the cron slot after ARGV[13] ("" unknown, "end" none)
-- ARGV[15] schema version of this layout (written to a new namespace's meta)
-- Returns: { created (0|1), fields of the stored schedule... }
--
-- Invariant 1 (canonical record, derived index): the status/next run written to the
-- record and the due index entry are written together, here. The caller's next run
-- is used only when the timing changed (or on create); otherwise runtime state
-- (status, run count, last run, next run, create time) is kept. A timing change bumps
-- `rev`, which makes every claim hint computed from the old timing fail its check in
-- claim_due. Any upsert also re-asserts the index entry, repairing one that went
-- missing. Invariant 5: refused (lib/guard.lua) in a namespace that needs Migrate;
-- keeps the meta `indexed` count. Invariant 8: a key holding something other than a
-- schedule record is reported (DUEQ_CORRUPT) and left as it is.

local refused = schema_guard(KEYS[4], KEYS[2])
if refused then return refused end

local id, key = ARGV[1], KEYS[3]
local r = sched_load(key)
if s_is_error(r) then return r end

local now = now_ms()
local kind, cron, every = ARGV[2], ARGV[3], tonumber(ARGV[4]) or ''
local tz, start_ms, end_ms = ARGV[5], tonumber(ARGV[6]) or '', tonumber(ARGV[7]) or ''
local limit = tonumber(ARGV[8]) or 0
local was = sched_indexed(r)

-- Status and next run from the caller's next run and the run count.
local function schedule_from_timing()
  if ARGV[13] == '' or (limit > 0 and r.runs >= limit) then
    r.status, r.next_ms, r.follow_ms = 'completed', '', ''
  else
    local follow = ARGV[14]
    if follow ~= 'end' then follow = tonumber(follow) or '' end
    r.status, r.next_ms, r.follow_ms = 'active', tonumber(ARGV[13]), follow
  end
end

redis.call('HSETNX', KEYS[4], 'schema', ARGV[15])

local created = 0
local timing_changed = true
if r == nil then
  created = 1
  r = { rev = 1, runs = 0, last_ms = '', created_ms = now }
  if ARGV[12] == '1' then
    r.status, r.next_ms, r.follow_ms = 'paused', '', ''
  end
else
  timing_changed = sched_new_timing(r, kind, cron, every, tz, start_ms, end_ms, limit)
  if timing_changed then r.rev = r.rev + 1 end
end
r.kind, r.cron, r.every_ms, r.tz, r.start_ms, r.end_ms, r.limit = kind, cron, every, tz,
  start_ms, end_ms, limit
r.job_name, r.payload, r.headers, r.updated_ms = ARGV[9], ARGV[10], ARGV[11], now
if timing_changed and r.status ~= 'paused' then schedule_from_timing() end
sched_save(key, r)

local is = sched_indexed(r)
if is then
  redis.call('ZADD', KEYS[1], r.next_ms, id)
else
  redis.call('ZREM', KEYS[1], id)
end
listing_add(KEYS[2], KEYS[4], id)
count_index(KEYS[4], was, is)

local out = { created }
local fields = sched_fields(id, r)
for i = 1, #fields do out[#out + 1] = fields[i] end
return out
