-- extend_lease: push a claimed job's lease deadline to now + lease, if the caller
-- still holds the lease.
--
-- KEYS[1] finished jobs (unused; every lease-guarded script gets the same keys)
-- KEYS[2] namespace meta   <prefix>:{<ns>}:meta
-- ARGV[1..6] key prefixes: job, ready, delayed, leased, listing, dedup
-- ARGV[7] job id   ARGV[8] lease token   ARGV[9] lease ms
-- Returns { "ok", new deadline } | { "missing" } | { "stale", state } | { "expired" }
--
-- Invariants kept:
-- * 4: only the current token of an unexpired lease extends it; an expired lease
--   cannot be revived (the job may already be re-handed).
-- * 1: the lease set's score follows the record's deadline, in the same script.
-- * 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local P_JOB, P_LEASED = ARGV[1], ARGV[4]
local id, token = ARGV[7], ARGV[8]
local key = P_JOB .. id
local r = job_load(key)
if r == nil then return { 'missing' } end
if is_error(r) then return r end
if r.state ~= 'active' or r.token ~= token then return { 'stale', r.state } end
if r.lease_until == '' or r.lease_until <= now then return { 'expired' } end

local until_ms = now + tonumber(ARGV[9])
r.lease_until, r.updated = until_ms, now
job_save(key, r)
redis.call('ZADD', P_LEASED .. r.queue, until_ms, id)
return { 'ok', until_ms }
