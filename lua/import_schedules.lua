#!lua
-- import_schedules: write one batch of schedules imported from another queue's layout.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] lock <prefix>:{<ns>}:migrate_lock
-- ARGV[3] token: lock token   ARGV[4] schema: schema version (written to a new
--   namespace's meta)
-- ARGV[5..] schedule{id, kind, cron, every_ms, tz, start_ms, end_ms, limit, job_name,
--   payload, headers, status, runs, last_ms, next_ms, created_ms}: groups of 16, one
--   per schedule, already validated and converted in Rust
-- Returns { "ok", imported, already present, indexed } | { "lost" }.
--
-- Idempotent: a schedule whose id the namespace already holds is left alone, so
-- importing twice gives the same store. Each record is written whole (record, listing,
-- index entry, meta count) in this one script: never half a record. Invariant 5 (docs/DESIGN.md):
-- refused in a namespace that itself needs Migrate; nothing written without the lease.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
if redis.call('GET', KEYS[5]) ~= ARGV[3] then return { 'lost' } end
local L = listing_of(KEYS[3], ARGV[2], KEYS[1])
local now = now_ms()
redis.call('HSETNX', KEYS[1], 'schema', ARGV[4])
local imported, present, indexed_n = 0, 0, 0
for i = 5, #ARGV, 16 do
  local id = ARGV[i]
  local key = ARGV[1] .. id
  if redis.call('EXISTS', key) == 1 then
    present = present + 1
  else
    local r = { kind = ARGV[i + 1], cron = ARGV[i + 2], every_ms = tonumber(ARGV[i + 3]) or '',
      tz = ARGV[i + 4], start_ms = tonumber(ARGV[i + 5]) or '',
      end_ms = tonumber(ARGV[i + 6]) or '', limit = tonumber(ARGV[i + 7]) or 0,
      job_name = ARGV[i + 8], payload = ARGV[i + 9], headers = ARGV[i + 10],
      status = ARGV[i + 11], rev = 1, runs = tonumber(ARGV[i + 12]) or 0,
      last_ms = tonumber(ARGV[i + 13]) or '', next_ms = tonumber(ARGV[i + 14]) or '',
      follow_ms = '', created_ms = tonumber(ARGV[i + 15]) or now, updated_ms = now }
    sched_save(key, r)
    listing_add(L, id)
    if sched_indexed(r) then
      redis.call('ZADD', KEYS[4], sched_due_at(r), id)
      count_index(KEYS[1], false, true)
      indexed_n = indexed_n + 1
    end
    imported = imported + 1
  end
end
return { 'ok', imported, present, indexed_n }
