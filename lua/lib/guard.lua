-- guard: prelude prepended to every script that writes schedules or reads the listing
-- (src/store/scripts.rs concatenates it), so each of them checks the namespace's store
-- schema and keeps the O(1) index count without a round trip of its own.
--
-- schema_guard(meta_key, ids_key) -> nil when the namespace is current or empty, else an
--   error reply "DUEQ_MIGRATE <found version> <meta key>" the service turns into
--   FAILED_PRECONDITION with the Migrate command. Found version: the `schema` field of
--   the meta hash; "1" for the pre-index layout (ids kept in a SET, no meta); "unknown"
--   when the meta hash is gone but a listing (ids_key, or schema 3's <base>lt)
--   exists (deleted or evicted). Schema 2
--   without a listing holds no schedule and is recorded as current in passing.
-- count_index(meta_key, was, is): keeps meta `indexed` = how many schedules are active
--   with a next run, i.e. how many entries the due index must hold. Comparing it with
--   ZCARD of the index (O(1)) reveals an index that was deleted or evicted.
-- now_ms(): Redis TIME in epoch ms, the one clock (invariant 7).
--
-- Invariant 5 (migration never silent): a namespace that needs Migrate is refused with
-- a clear error by every script that would otherwise answer "nothing due" forever.

local DUEQ_SCHEMA = '3'

local function schema_guard(meta_key, ids_key)
  local found = redis.call('HGET', meta_key, 'schema')
  if found == DUEQ_SCHEMA then return nil end
  if found == '2' and redis.call('EXISTS', ids_key) == 0 then
    -- Schema 2 differs from 3 only in how a schedule record is stored, and every
    -- schema-2 record is listed: with no listing there is nothing to convert (a
    -- namespace that only ever held jobs), so it is at schema 3 as it stands.
    redis.call('HSET', meta_key, 'schema', DUEQ_SCHEMA)
    return nil
  end
  if not found then
    local kind = redis.call('TYPE', ids_key)['ok']
    if kind == 'none' then
      -- Schema 3 lists ids in <base>lt and its leaves (lib/schedule.lua).
      if redis.call('EXISTS', string.sub(ids_key, 1, -4) .. 'lt') == 0 then return nil end
      kind = 'tree'
    end
    if kind == 'set' then found = '1' else found = 'unknown' end
  end
  return redis.error_reply('DUEQ_MIGRATE ' .. found .. ' ' .. meta_key)
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function count_index(meta_key, was, is)
  if was and not is then
    redis.call('HINCRBY', meta_key, 'indexed', -1)
  elseif is and not was then
    redis.call('HINCRBY', meta_key, 'indexed', 1)
  end
end

