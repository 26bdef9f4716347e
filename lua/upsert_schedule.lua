-- upsert_schedule: create a schedule or replace its definition.
--
-- KEYS[1] due index   (zset id -> next run ms)    <prefix>:{<ns>}:due
-- KEYS[2] id listing  (zset id -> 0, lex order)    <prefix>:{<ns>}:ids
-- KEYS[3] schedule    (hash, the canonical record) <prefix>:{<ns>}:s:<id>
-- KEYS[4] namespace meta (hash)                    <prefix>:{<ns>}:meta
-- ARGV[1]  id
-- ARGV[2]  timing fingerprint (canonical text of cron/every/tz/start/end/limit)
-- ARGV[3]  kind: "cron" | "every"
-- ARGV[4]  cron expression ("" for every)
-- ARGV[5]  every in ms ("" for cron)
-- ARGV[6]  timezone
-- ARGV[7]  start ms ("" none)      ARGV[8] end ms ("" none)
-- ARGV[9]  run limit (0 = none)
-- ARGV[10] job name                ARGV[11] payload (bytes)
-- ARGV[12] headers (JSON object)
-- ARGV[13] "1" to create paused
-- ARGV[14] next run ms computed by the caller from the new timing ("" = never)
-- ARGV[15] follow ms: the cron slot after ARGV[14] ("" unknown, "end" none)
-- ARGV[16] schema version of this layout (written to a new namespace's meta)
-- Returns: { created (0|1), HGETALL of the stored schedule... }
--
-- Invariant 1 (canonical hash, derived index): the status/next run written to the hash
-- and the due index entry are written together, here. The caller's next run is used
-- only when the timing changed (or on create); otherwise runtime state (status, run
-- count, last run, next run, create time) is kept. A timing change bumps `rev`, which
-- makes every claim hint computed from the old timing fail its check in claim_due.
-- Any upsert also re-asserts the index entry, repairing one that went missing.
-- Invariant 5: refused (lib/guard.lua) in a namespace that needs Migrate; keeps the
-- meta `indexed` count.

local refused = schema_guard(KEYS[4], KEYS[2])
if refused then return refused end

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local id = ARGV[1]
local key = KEYS[3]

local function set_definition()
  redis.call('HSET', key,
    'id', id, 'tfp', ARGV[2], 'kind', ARGV[3], 'cron', ARGV[4], 'every_ms', ARGV[5],
    'tz', ARGV[6], 'start_ms', ARGV[7], 'end_ms', ARGV[8], 'limit', ARGV[9],
    'job_name', ARGV[10], 'payload', ARGV[11], 'headers', ARGV[12], 'updated_ms', now)
end

-- Decide status and index entry from the caller's next run and the run count.
local function schedule_from_timing(runs)
  local limit = tonumber(ARGV[9])
  if ARGV[14] == '' or (limit > 0 and runs >= limit) then
    redis.call('HSET', key, 'status', 'completed', 'next_ms', '', 'follow_ms', '')
    redis.call('ZREM', KEYS[1], id)
  else
    redis.call('HSET', key, 'status', 'active', 'next_ms', ARGV[14], 'follow_ms', ARGV[15])
    redis.call('ZADD', KEYS[1], ARGV[14], id)
  end
end

redis.call('HSETNX', KEYS[4], 'schema', ARGV[16])
local before = redis.call('HMGET', key, 'status', 'next_ms')

local created = 0
if redis.call('EXISTS', key) == 0 then
  created = 1
  set_definition()
  redis.call('HSET', key, 'rev', 1, 'runs', 0, 'last_ms', '', 'created_ms', now)
  if ARGV[13] == '1' then
    redis.call('HSET', key, 'status', 'paused', 'next_ms', '', 'follow_ms', '')
  else
    schedule_from_timing(0)
  end
  redis.call('ZADD', KEYS[2], 0, id)
else
  local old_tfp = redis.call('HGET', key, 'tfp')
  set_definition()
  local status = redis.call('HGET', key, 'status')
  if old_tfp ~= ARGV[2] then
    redis.call('HINCRBY', key, 'rev', 1)
    if status ~= 'paused' then
      schedule_from_timing(tonumber(redis.call('HGET', key, 'runs')) or 0)
    end
  elseif status == 'active' then
    local next_ms = redis.call('HGET', key, 'next_ms')
    if next_ms and next_ms ~= '' then
      redis.call('ZADD', KEYS[1], next_ms, id)
    end
  end
  redis.call('ZADD', KEYS[2], 0, id)
end

local after = redis.call('HMGET', key, 'status', 'next_ms')
count_index(KEYS[4], indexed(before[1], before[2]), indexed(after[1], after[2]))

local out = { created }
local fields = redis.call('HGETALL', key)
for i = 1, #fields do out[#out + 1] = fields[i] end
return out
