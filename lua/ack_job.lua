-- ack_job: complete a claimed job, if the caller still holds its lease.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- ARGV[1..6] key prefixes: job, ready, delayed, leased, listing, dedup
-- ARGV[7] job id   ARGV[8] lease token
-- Returns { "ok", now } | { "missing" } | { "stale", state } | { "expired" }
--
-- Invariants kept:
-- * 4 (a lease is the only authority): only the current token of an active job whose
--   lease has not expired (deadline > Redis TIME) may complete it; anything else
--   changes nothing, so a job is never completed twice and a re-handed job is never
--   completed by its previous holder.
-- * 1: the job leaves its lease set and enters the finished set (retention) in the
--   same script that marks it completed. O(log N).

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local P_JOB, P_LEASED = ARGV[1], ARGV[4]
local id, token = ARGV[7], ARGV[8]
local key = P_JOB .. id
local h = redis.call('HMGET', key, 'state', 'token', 'lease_until', 'queue')
if not h[1] then return { 'missing' } end
if h[1] ~= 'active' or h[2] ~= token then return { 'stale', h[1] } end
if (tonumber(h[3]) or 0) <= now then return { 'expired' } end

redis.call('HSET', key, 'state', 'completed', 'lease_until', '', 'finished_ms', now, 'updated_ms', now)
redis.call('ZREM', P_LEASED .. h[4], id)
redis.call('ZADD', KEYS[1], now, id)
return { 'ok', now }
