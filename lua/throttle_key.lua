#!lua flags=allow-oom
-- throttle_key: stop a key's jobs from starting for a while, or lift that (issue 32;
-- lib/flow.lua).
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] queue: the queue   ARGV[10] key: the flow key (1-128 bytes)
-- ARGV[11] for_ms: how long from now (Redis clock), at most a day; 0 lifts it
-- Returns { now, until (epoch ms; "" when lifted), woke (1: lanes the key's last
--           throttle held came back to the rotation, for the caller to wake waiting
--           claims) }
--
-- The throttle is the key's score in the queue's throttles zset (lib/flow.lua `h`):
-- a claim parks a lane carrying the key (as any of its three keys) in the time park
-- `t` until then (flow.blocked), and drops ended throttles (flow.open). A new
-- throttle replaces the key's last one. When that one ended later than the new end
-- (a shorter throttle, or a lift), the lanes it parked come back to the rotation now:
-- they are the lanes carrying the key parked until exactly its end (at most
-- flow.PARK_MAX of them per call; any others run at that end), and a lane still held
-- by another limit parks again at the next claim. O(log K) plus the lanes put back.
-- Invariant 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local meta, queue, key = KEYS[2], ARGV[9], ARGV[10]
local for_ms = tonumber(ARGV[11])
local now = now_ms()
local hkey = flow.key(meta, 'h', queue)
local before = tonumber(redis.call('ZSCORE', hkey, key) or '')
local until_ms = nil
if for_ms > 0 then
  until_ms = now + for_ms
  redis.call('ZADD', hkey, until_ms, key)
  redis.call('HSET', queue_state(meta, queue), 'fh', '1') -- claims look at throttles
else
  redis.call('ZREM', hkey, key)
  if redis.call('EXISTS', hkey) == 0 then redis.call('HDEL', queue_state(meta, queue), 'fh') end
end

-- The lanes the last throttle parked, back in the rotation when it ended later.
local woke = 0
if before and before > now and (until_ms == nil or until_ms < before) then
  local tkey = flow.key(meta, 't', queue)
  local parked = redis.call('ZRANGEBYSCORE', tkey, before, before, 'LIMIT', 0, flow.PARK_MAX)
  local pol = nil
  for _, L in ipairs(parked) do
    local f, c, r = flow.lane_keys(L)
    if f == key or c == key or r == key then
      redis.call('ZREM', tkey, L)
      pol = pol or flow.policy(meta, queue)
      flow.enter(meta, queue, pol, L)
      woke = 1
    end
  end
end
return { now, until_ms or '', woke }
