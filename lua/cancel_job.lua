-- cancel_job: cancel a pending or delayed job.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- ARGV[1..6] key prefixes: job, ready, delayed, leased, listing, dedup
-- ARGV[7] job id
-- Returns { "ok", HGETALL... } | { "missing" } | { "state", state }
--
-- Invariant 1: the job leaves its ready or delayed set and enters the finished set in
-- the same script that marks it cancelled; an active job (leased to a worker) is
-- refused, so cancelling never races a worker's ack. O(log N).

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local P_JOB, P_READY, P_DELAYED = ARGV[1], ARGV[2], ARGV[3]
local id = ARGV[7]
local key = P_JOB .. id
local h = redis.call('HMGET', key, 'state', 'queue', 'rmember')
if not h[1] then return { 'missing' } end
if h[1] == 'pending' then
  redis.call('ZREM', P_READY .. h[2], h[3])
elseif h[1] == 'delayed' then
  redis.call('ZREM', P_DELAYED .. h[2], id)
else
  return { 'state', h[1] }
end
redis.call('HSET', key, 'state', 'cancelled', 'finished_ms', now, 'updated_ms', now)
redis.call('ZADD', KEYS[1], now, id)
local out = { 'ok' }
local fields = redis.call('HGETALL', key)
for i = 1, #fields do out[#out + 1] = fields[i] end
return out
