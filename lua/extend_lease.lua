-- extend_lease: move a claimed job's lease deadline to now + lease.
--
-- KEYS[1] finished jobs (unused; routes the call to the namespace's slot)
-- ARGV[1..6] key prefixes: job, ready, delayed, leased, listing, dedup
-- ARGV[7] job id   ARGV[8] lease token   ARGV[9] lease ms
-- Returns { "ok", new deadline ms } | { "missing" } | { "stale", state } | { "expired" }
--
-- Invariants kept:
-- * 4: only the current token of an unexpired lease may extend it; an expired lease
--   is not revived (the job may already be re-handed, or be about to be).
-- * 1 / 3: the hash and the lease set (scored by deadline) move together. O(log N).

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local P_JOB, P_LEASED = ARGV[1], ARGV[4]
local id, token = ARGV[7], ARGV[8]
local key = P_JOB .. id
local h = redis.call('HMGET', key, 'state', 'token', 'lease_until', 'queue')
if not h[1] then return { 'missing' } end
if h[1] ~= 'active' or h[2] ~= token then return { 'stale', h[1] } end
if (tonumber(h[3]) or 0) <= now then return { 'expired' } end

local until_ms = now + tonumber(ARGV[9])
redis.call('HSET', key, 'lease_until', until_ms, 'updated_ms', now)
redis.call('ZADD', P_LEASED .. h[4], until_ms, id)
return { 'ok', until_ms }
