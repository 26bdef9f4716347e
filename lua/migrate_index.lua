#!lua
-- migrate_index: walk one batch of the due index and drop what no record backs.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] lock <prefix>:{<ns>}:migrate_lock
-- ARGV[3] token: lock token ("" with dry run)   ARGV[4] cursor: cursor
-- ARGV[5] batch: batch size
-- ARGV[6] dry_run: "1" = dry run (count only)
-- Returns { "ok", next cursor ("0" = done), scanned, removed, repaired } | { "lost" }.
-- A dry run counts only entries whose record is gone: the rest would already have been
-- fixed by the record pass that precedes this walk, and counting them again would
-- report more than a real run does.
--
-- Invariant 1 (docs/DESIGN.md): an entry stays only if its record is active with a next run; a score
-- the record disagrees with is corrected. The same repair a claim does, for every
-- entry. An entry whose record is sound but unlisted (a listing leaf deleted by hand:
-- the record pass walks the listing, so it cannot meet such a record) is listed
-- again, and counted as repaired. Invariant 3: one ZSCAN step per call.

local dry = ARGV[6] == '1'
if not dry and redis.call('GET', KEYS[5]) ~= ARGV[3] then return { 'lost' } end
local L = listing_of(KEYS[3], ARGV[2], KEYS[1])
local scan = redis.call('ZSCAN', KEYS[4], ARGV[4], 'COUNT', ARGV[5])
local items = scan[2]
local scanned, removed, repaired = 0, 0, 0
for i = 1, #items, 2 do
  local id, score = items[i], items[i + 1]
  scanned = scanned + 1
  -- A dry run precedes any conversion, so it reads either layout; a real run follows
  -- the record pass, and a record still a hash then is one it could not convert
  -- (reported): its entry goes, or every claim would stop at it.
  local r
  if dry then r = sched_read(ARGV[1] .. id) else r = sched_load(ARGV[1] .. id) end
  if is_error(r) then r = nil end -- not a record: nothing backs the entry
  if dry then
    if r == nil then removed = removed + 1 end
  elseif r ~= nil and r.target ~= '' and sched_indexed(r) then
    -- A target schedule in the due index: moved to its own (lib/schedule.lua).
    sched_index_put(KEYS[4], id, r)
    listing_add(L, id)
    repaired = repaired + 1
  elseif not sched_indexed(r) then
    removed = removed + 1
    redis.call('ZREM', KEYS[4], id)
  else
    local fixed = listing_add(L, id) == 1
    if sched_due_at(r) ~= tonumber(score) then
      fixed = true
      redis.call('ZADD', KEYS[4], sched_due_at(r), id)
    end
    if fixed then repaired = repaired + 1 end
  end
end
return { 'ok', scan[1], scanned, removed, repaired }
