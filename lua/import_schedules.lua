-- import_schedules: write one batch of schedules imported from another queue's layout.
--
-- KEYS[1] due index <prefix>:{<ns>}:due   KEYS[2] listing <prefix>:{<ns>}:ids
-- KEYS[3] meta <prefix>:{<ns>}:meta      KEYS[4] lock <prefix>:{<ns>}:migrate_lock
-- ARGV[1] lock token   ARGV[2] schedule key prefix <prefix>:{<ns>}:s:
-- ARGV[3] schema version (written to a new namespace's meta)
-- ARGV[4..] groups of 17, one per schedule, already validated and converted in Rust:
--   id, tfp, kind, cron, every_ms, tz, start_ms, end_ms, limit, job_name, payload,
--   headers, status, runs, last_ms, next_ms, created_ms
-- Returns { "ok", imported, already present, indexed } | { "lost" }.
--
-- Idempotent: a schedule whose id the namespace already holds is left alone, so
-- importing twice gives the same store. Each record is written whole (hash, listing,
-- index entry, meta count) in this one script: never half a record. Invariant 5:
-- refused in a namespace that itself needs Migrate; nothing written without the lease.

local refused = schema_guard(KEYS[3], KEYS[2])
if refused then return refused end
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return { 'lost' } end
local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
redis.call('HSETNX', KEYS[3], 'schema', ARGV[3])
local imported, present, indexed_n = 0, 0, 0
for i = 4, #ARGV, 17 do
  local id = ARGV[i]
  local key = ARGV[2] .. id
  if redis.call('EXISTS', key) == 1 then
    present = present + 1
  else
    local status, next_ms = ARGV[i + 12], ARGV[i + 15]
    redis.call('HSET', key,
      'id', id, 'tfp', ARGV[i + 1], 'kind', ARGV[i + 2], 'cron', ARGV[i + 3],
      'every_ms', ARGV[i + 4], 'tz', ARGV[i + 5], 'start_ms', ARGV[i + 6],
      'end_ms', ARGV[i + 7], 'limit', ARGV[i + 8], 'job_name', ARGV[i + 9],
      'payload', ARGV[i + 10], 'headers', ARGV[i + 11], 'status', status,
      'rev', 1, 'runs', ARGV[i + 13], 'last_ms', ARGV[i + 14], 'next_ms', next_ms,
      'follow_ms', '', 'created_ms', ARGV[i + 16], 'updated_ms', now)
    redis.call('ZADD', KEYS[2], 0, id)
    if indexed(status, next_ms) then
      redis.call('ZADD', KEYS[1], next_ms, id)
      count_index(KEYS[3], false, true)
      indexed_n = indexed_n + 1
    end
    imported = imported + 1
  end
end
return { 'ok', imported, present, indexed_n }
