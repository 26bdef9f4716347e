#!lua
-- migrate_apply: write one batch of Migrate's decisions.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] lock <prefix>:{<ns>}:migrate_lock
-- ARGV[3] token: lock token
-- ARGV[4..] decision{id, state, action, ms}: groups of 4: id, state read by
--   migrate_scan ("rev|status|next_ms|runs"), action, ms
--   action "index"    : active with next run = ms: listed, indexed at the score the record
--                       derives (sched_due_at: jitter, trigger, buffer, backfill), else ms
--   action "schedule" : active, next run was missing or unusable: next_ms := ms
--   action "complete" : active but no slot is left: status := completed
--   action "unindex"  : paused or completed: listed, not indexed
-- Returns { "ok", indexed, repaired, removed, skipped, converted } | { "lost" }.
--
-- Invariant 1 (docs/DESIGN.md): the record stays canonical. A decision is applied only if the record's
-- state (revision, status, next run, run count) is still the one scanned, and only
-- its index entries (and, for "schedule" / "complete", next_ms and status) are
-- touched. A record still kept as a hash (schema 1 and 2) is rewritten packed
-- (lib/schedule.lua, schema 3) with the same fields: `converted` counts them.
-- Invariant 3: bounded by the batch. Invariant 5: nothing is written once the lease
-- is lost.

if redis.call('GET', KEYS[5]) ~= ARGV[3] then return { 'lost' } end
local L = listing_of(KEYS[3], ARGV[2], KEYS[1])
local indexed, repaired, removed, skipped, converted = 0, 0, 0, 0, 0
for i = 4, #ARGV, 4 do
  local id, seen, action, ms = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local key = ARGV[1] .. id
  local r, is_hash = sched_read(key)
  if r == nil or is_error(r) or migrate_state(r) ~= seen then
    skipped = skipped + 1 -- changed since the scan; its own script kept the index
  else
    local changed = is_hash
    listing_add(L, id)
    -- A target schedule's entry lives in the target index (lib/schedule.lua
    -- sched_target_index), never in the due index.
    local index = KEYS[4]
    if r.target ~= '' then
      index = sched_target_index(KEYS[4])
      redis.call('ZREM', KEYS[4], id)
    end
    local score = redis.call('ZSCORE', index, id)
    if action == 'index' or action == 'schedule' then
      if action == 'schedule' then
        r.next_ms, r.follow_ms = tonumber(ms), ''
        changed = true
        repaired = repaired + 1
      end
      -- The score the record derives (a jittered next run, a triggered, buffered or
      -- backfilled occurrence first: lib/schedule.lua sched_due_at), else ms.
      local at = sched_due_at(r)
      if at == '' then at = tonumber(ms) end
      if not score then
        indexed = indexed + 1
      elseif tonumber(score) ~= at and action == 'index' then
        repaired = repaired + 1
      end
      redis.call('ZADD', index, at, id)
    else
      if action == 'complete' then
        r.status, r.next_ms, r.follow_ms = 'completed', '', ''
        changed = true
        repaired = repaired + 1
      end
      if score then
        redis.call('ZREM', index, id)
        removed = removed + 1
      end
    end
    if changed then sched_save(key, r) end
    if is_hash then converted = converted + 1 end
  end
end
return { 'ok', indexed, repaired, removed, skipped, converted }
