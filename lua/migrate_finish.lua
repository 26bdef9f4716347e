-- migrate_finish: record that a namespace is fully migrated, and release the lock.
--
-- KEYS[1] meta <prefix>:{<ns>}:meta   KEYS[2] listing <prefix>:{<ns>}:ids
-- KEYS[3] listing built while upgrading <prefix>:{<ns>}:ids_next
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] lock <prefix>:{<ns>}:migrate_lock
-- ARGV[1] lock token   ARGV[2] schema version to record   ARGV[3] "upgrade" | "repair"
-- Returns { "ok", entries in the due index } | { "lost" }.
--
-- Invariant 5: the version is bumped only here, after every batch succeeded, so a
-- Migrate killed earlier leaves the namespace refused (never half-served) and the next
-- Migrate redoes the idempotent batches. Upgrading swaps the new listing in with
-- UNLINK + RENAME: O(1) on the main thread whatever the size of the old set.
-- The meta `indexed` count is set from the index just verified, so the O(1) damage
-- check starts from a true baseline.

if redis.call('GET', KEYS[5]) ~= ARGV[1] then return { 'lost' } end
if ARGV[3] == 'upgrade' then
  redis.call('UNLINK', KEYS[2])
  if redis.call('EXISTS', KEYS[3]) == 1 then
    redis.call('RENAME', KEYS[3], KEYS[2])
  end
end
local size = redis.call('ZCARD', KEYS[4])
redis.call('HSET', KEYS[1], 'schema', ARGV[2], 'indexed', size)
redis.call('DEL', KEYS[5])
return { 'ok', size }
