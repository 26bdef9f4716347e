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
-- Returns { now, until (epoch ms; "" when lifted) }
--
-- The throttle is the key's score in the queue's throttles zset (lib/flow.lua `h`):
-- a claim parks a lane carrying the key (as any of its three keys) until then
-- (flow.blocked) and drops ended throttles (flow.open). A new throttle replaces the
-- key's last one. Lifting removes it; lanes already parked by it run at their parked
-- time. O(log K). Invariant 5: refused while the namespace's jobs are in an older
-- layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local meta, queue, key = KEYS[2], ARGV[9], ARGV[10]
local for_ms = tonumber(ARGV[11])
local now = now_ms()
local hkey = flow.key(meta, 'h', queue)
if for_ms <= 0 then
  redis.call('ZREM', hkey, key)
  return { now, '' }
end
local until_ms = now + for_ms
redis.call('ZADD', hkey, until_ms, key)
return { now, until_ms }
