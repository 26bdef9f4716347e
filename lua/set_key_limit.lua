#!lua
-- set_key_limit: give one key of a queue its own limits, or remove them (issue 32;
-- lib/flow.lua).
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] queue: the queue   ARGV[10] key: the flow key (1-128 bytes)
-- ARGV[11] limit: "max_running,limit,period_ms,burst" (domain::KeyLimit::record_text,
--          lib/flow.lua flow.limits; '' parts fall back to the policy); "" removes
--          the key's own limits
-- Returns { changed (1: the stored limits differ from before), woke (1: lanes parked
--           on the key's concurrency came back to the rotation, for the caller to
--           wake waiting claims) }
--
-- The override is the key's entry in the queue's overrides hash (lib/flow.lua `k`);
-- claims read it at their next call. A changed limit puts the lanes parked on the
-- key's concurrency back in the rotation (at most flow.PARK_MAX; a lane still over
-- the limit parks again at the next claim), so a raised limit takes effect without
-- waiting for a slot of the key to free. O(1) plus the lanes put back. Invariant 5:
-- refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local meta, queue, key, text = KEYS[2], ARGV[9], ARGV[10], ARGV[11]
local kkey = flow.key(meta, 'k', queue)
local before = redis.call('HGET', kkey, key) or ''
if before == text then return { 0, 0 } end
if text == '' then
  redis.call('HDEL', kkey, key)
  if redis.call('EXISTS', kkey) == 0 then redis.call('HDEL', queue_state(meta, queue), 'fk') end
else
  redis.call('HSET', kkey, key, text)
  redis.call('HSET', queue_state(meta, queue), 'fk', '1') -- claims look at overrides
end
local woke = 0
if flow.unpark(meta, queue, key) > 0 then woke = 1 end
return { 1, woke }
