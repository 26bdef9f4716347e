#!lua
-- migrate_finish: record that a namespace is fully migrated, and release the lock.
--
-- KEYS[1] meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
-- <prefix>:{<ns>}:ids   KEYS[3] due index <prefix>:{<ns>}:due
-- KEYS[4] lock <prefix>:{<ns>}:migrate_lock
-- KEYS[5] target index <prefix>:{<ns>}:due:t (target schedules, issue 30: meta `indexed`
--         counts both indexes)
-- ARGV[1] token: lock token   ARGV[2] schema: schema version to record
-- ARGV[3] listed: the listing's size to record as meta `listed` ("" keeps it): sent when meta
--         was lost, counted by the walk of the listing just done
-- Returns { "ok", entries in the due index and the target index } | { "lost" }.
--
-- Invariant 5 (docs/DESIGN.md): the version is bumped only here, after every batch succeeded, so a
-- Migrate killed earlier leaves the namespace refused (never half-served) and the next
-- Migrate redoes the idempotent batches. The old listing, which the record pass has
-- copied into schema 3's (lib/schedule.lua), goes with UNLINK: O(1) on the main
-- thread whatever its size. The meta `indexed` count is set from the index just
-- verified, so the O(1) damage check starts from a true baseline.

if redis.call('GET', KEYS[4]) ~= ARGV[1] then return { 'lost' } end
redis.call('UNLINK', KEYS[2])
local size = redis.call('ZCARD', KEYS[3]) + redis.call('ZCARD', KEYS[5])
redis.call('HSET', KEYS[1], 'schema', ARGV[2], 'indexed', size)
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'listed', ARGV[3]) end
redis.call('DEL', KEYS[4])
return { 'ok', size }
