-- retry_job: make a dead job pending again, with its attempts reset to 0.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- ARGV[1..6] key prefixes: job, ready, delayed, leased, listing, dedup
-- ARGV[7] job id
-- Returns { "ok", HGETALL... } | { "missing" } | { "state", state }
--
-- Invariant 1: the job leaves the finished set (so retention no longer prunes it) and
-- enters its ready set in the same script that marks it pending. Its error history
-- is kept. O(log N).

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local P_JOB, P_READY = ARGV[1], ARGV[2]
local id = ARGV[7]
local key = P_JOB .. id
local h = redis.call('HMGET', key, 'state', 'queue', 'rmember', 'priority')
if not h[1] then return { 'missing' } end
if h[1] ~= 'dead' then return { 'state', h[1] } end
redis.call('ZREM', KEYS[1], id)
redis.call('HSET', key, 'state', 'pending', 'attempts', 0, 'token', '', 'lease_until', '',
  'finished_ms', '', 'run_at_ms', now, 'updated_ms', now)
redis.call('ZADD', P_READY .. h[2], -tonumber(h[4]), h[3])
local out = { 'ok' }
local fields = redis.call('HGETALL', key)
for i = 1, #fields do out[#out + 1] = fields[i] end
return out
