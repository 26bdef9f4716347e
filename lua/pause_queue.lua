#!lua flags=allow-oom
-- pause_queue: pause or resume a queue (issue 14).
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] queue: the queue   ARGV[10] paused: "1" pause | "0" resume
-- Returns 1 when the flag changed, 0 when it already was so.
--
-- The flag is the queue state's `paused` field (lib/job.lua queue_state), which
-- claim_jobs and peek_jobs read with one HGET per queue: a paused queue is neither
-- claimed from nor woken for; enqueues, acks and fails are unaffected. Pausing
-- registers the queue, so a queue paused before its first job is listed. O(log Q).
-- Invariant 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local meta, queue = KEYS[2], ARGV[9]
local state = queue_state(meta, queue)
if ARGV[10] == '1' then
  redis.call('ZADD', queue_registry(meta), 'NX', 0, queue)
  return redis.call('HSET', state, 'paused', '1')
end
return redis.call('HDEL', state, 'paused')
