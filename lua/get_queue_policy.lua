#!lua flags=allow-oom,no-writes
-- get_queue_policy: a queue's flow policy (issue 32; lib/flow.lua).
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] queue: the queue
-- Returns { key_limits (keys with a SetKeyLimit override), policy (the queue state's
--           `flow` text, "" none), w (the number of weight items that follow), then
--           the weights hash as key, weight pairs }
--
-- Read-only: an HGET, an HLEN and an HGETALL of at most 1,000 weights. Invariant 5:
-- refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local meta, queue = KEYS[2], ARGV[9]
local policy = redis.call('HGET', queue_state(meta, queue), 'flow') or ''
local out = { redis.call('HLEN', flow.key(meta, 'k', queue)), policy }
local weights = {}
if policy ~= '' then weights = redis.call('HGETALL', flow.key(meta, 'g', queue)) end
out[#out + 1] = #weights
for _, item in ipairs(weights) do out[#out + 1] = item end
return out
