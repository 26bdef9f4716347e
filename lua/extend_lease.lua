#!lua flags=allow-oom
-- extend_lease: push a claimed job's lease deadline to now + lease, if the caller
-- still holds the lease.
--
-- KEYS[1] finished jobs (unused; every lease-guarded script gets the same keys)
-- KEYS[2] namespace meta   <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: job id   ARGV[10] token: lease token   ARGV[11] lease_ms: lease ms
-- Returns { "ok", new deadline } | { "missing" } | { "stale", state } | { "expired" }
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 4: only the current token of an unexpired lease extends it; an expired lease
--   cannot be revived (the job may already be re-handed).
-- * 1: the lease set's score follows the record's deadline, in the same script.
-- * 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local id = ARGV[9]
local key, r = leased_job(K, id, ARGV[10], now)
if not key then return r end

local until_ms = now + tonumber(ARGV[11])
r.lease_until, r.updated = until_ms, now
job_save(key, r)
redis.call('ZADD', K.leased .. r.queue, until_ms, id)
return { 'ok', until_ms }
