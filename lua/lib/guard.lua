-- guard: the schema check and the index count, prepended (after core.lua and
-- rules.lua) to every schedule script, so each checks the namespace's store schema
-- and keeps the O(1) index count without a round trip of its own.
--
-- schema_guard(meta, legacy_listing, listing_top) -> nil when the namespace is
--   current or empty, else an error reply "DUEQ_MIGRATE <found>" that the service
--   turns into FAILED_PRECONDITION with the Migrate command. Found: the `schema` field
--   of meta; "1" for the pre-index layout (ids kept in a SET at legacy_listing, no
--   meta); "unknown" when meta is gone but a listing (legacy_listing, or schema 3's
--   listing_top) exists (deleted or evicted). Schema 2 without a listing holds no
--   schedule and is recorded as current in passing.
-- count_index(meta, was, is): keeps meta `indexed` = how many schedules are active
--   with a next run, i.e. how many entries the due index must hold. Comparing it with
--   ZCARD of the index (O(1)) reveals an index that was deleted or evicted.
--
-- Invariant 5 (docs/DESIGN.md) (migration never silent): a namespace that needs Migrate is refused with
-- a clear error by every script that would otherwise answer "nothing due" forever.

local DUEQ_SCHEMA = '3'

local function schema_guard(meta, legacy_listing, listing_top)
  local found = redis.call('HGET', meta, 'schema')
  if found == DUEQ_SCHEMA then return nil end
  if found == '2' and redis.call('EXISTS', legacy_listing) == 0 then
    -- Schema 2 differs from 3 only in how a schedule record is stored, and every
    -- schema-2 record is listed: with no listing there is nothing to convert (a
    -- namespace that only ever held jobs), so it is at schema 3 as it stands.
    redis.call('HSET', meta, 'schema', DUEQ_SCHEMA)
    return nil
  end
  if not found then
    local kind = redis.call('TYPE', legacy_listing)['ok']
    if kind == 'none' then
      if redis.call('EXISTS', listing_top) == 0 then return nil end
      kind = 'tree'
    end
    if kind == 'set' then found = '1' else found = 'unknown' end
  end
  return redis.error_reply('DUEQ_MIGRATE ' .. found)
end

local function count_index(meta, was, is)
  if was and not is then
    redis.call('HINCRBY', meta, 'indexed', -1)
  elseif is and not was then
    redis.call('HINCRBY', meta, 'indexed', 1)
  end
end

