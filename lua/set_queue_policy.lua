#!lua
-- set_queue_policy: replace a queue's flow policy (issue 32; lib/flow.lua).
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] queue: the queue
-- ARGV[10] policy: the queue state's `flow` text (domain::QueuePolicy::record_text,
--          lib/flow.lua flow.parse; "" no policy)
-- ARGV[11..] weight{key, weight}: FAIRNESS_WEIGHTED's weights: groups of 2
-- Returns 1.
--
-- The policy is field `flow` of the queue state (removed for no policy), the weights
-- the queue's weights hash (lib/flow.lua `g`), replaced whole. Claims read both at
-- their next call, and the lanes parked under the old limits come back to the
-- rotation to be checked again then (lib/flow.lua flow.release_parked; a rotation of
-- the other fairness moves over at the next claim, flow.open). Setting a policy registers the queue, so a queue
-- given one before its first job is listed. The service validated every part (the
-- weights at most 1,000). Invariant 5: refused while the namespace's jobs are in an
-- older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local meta, queue, text = KEYS[2], ARGV[9], ARGV[10]
local state = queue_state(meta, queue)
local gkey = flow.key(meta, 'g', queue)
redis.call('DEL', gkey)
-- From FIFO to turns or back, the lanes move to the other rotation over the next
-- claims (lib/flow.lua flow.open, while `fm` is set).
local was_fifo = flow.parse(redis.call('HGET', state, 'flow')).fair == 'f'
if was_fifo ~= (flow.parse(text).fair == 'f') then redis.call('HSET', state, 'fm', '1') end
if text == '' then
  redis.call('HDEL', state, 'flow')
else
  redis.call('ZADD', queue_registry(meta), 'NX', 0, queue)
  redis.call('HSET', state, 'flow', text)
  if #ARGV > 10 then redis.call('HSET', gkey, unpack(ARGV, 11)) end
end
flow.cache[queue] = flow.parse(text)
flow.release_parked(meta, queue)
return 1
