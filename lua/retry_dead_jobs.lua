#!lua
-- retry_dead_jobs: make up to a batch of a queue's dead jobs pending again (issue 14).
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] queue: the queue   ARGV[10] limit: most jobs to retry (the caller bounds it: at most 500)
-- ARGV[11] fingerprint: only the dead jobs of this group of the queue (issue 33,
--          lib/job.lua dg; "" = every dead job of the queue)
-- Returns { retried, more (1 if dead jobs (of the group) remain in the queue), register (1: put the
--           namespace in the prune due-set: graph work queued, issue 34) }
--
-- Each job as retry_job does it: attempts reset, error history kept, out of the
-- finished set, at the head of its ready list, counted pending, out of the queue's
-- dead set (lib/job.lua queue state) and its group, longest dead first. The dead set
-- (or the group's set, with a fingerprint) is the work list: a job leaves it in the
-- script that retries it, so two callers never retry
-- one job twice and a repeated call after success finds nothing (idempotent). An
-- entry whose job is no longer dead (or gone) is dropped. Invariant 3: O(batch log N).
-- Invariant 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local meta, queue, limit = KEYS[2], ARGV[9], tonumber(ARGV[10])
local work = queue_dead(meta, queue)
if ARGV[11] ~= '' then work = dg.set(meta, ARGV[11], queue) end
local retried = 0
for _, id in ipairs(redis.call('ZRANGE', work, 0, limit - 1)) do
  local key = K.job .. id
  local r = job_load(key)
  if r and not is_error(r) and r.state == 'dead' and r.queue == queue then
    dead_remove(meta, id, r)
    if r.dag ~= '' then
      -- A node of a flow (issue 34): as retry_job.lua re-arms it.
      graph.rearm_node(K, meta, KEYS[1], graph.key(meta, r.dag), r.dag, r.ref, now)
      graph.run_item(K, meta, KEYS[1], { 'c', r.dag, r.ref, 0 }, now)
    else
      redis.call('ZREM', KEYS[1], id)
      retention.forget(meta, id, r) -- (lib/job.lua, issue 36)
      r.state, r.attempts, r.token, r.lease_until = 'pending', 0, '', ''
      r.finished, r.run_at, r.updated = '', now, now
      job_save(key, r)
      flow.ready(K, meta, r, true)
      count_pending(meta, r, 1)
    end
    retried = retried + 1
  end
  -- A stale entry (the job is no longer dead, or gone) is dropped.
  redis.call('ZREM', work, id)
end
local more = 0
if redis.call('ZCARD', work) > 0 then more = 1 end
local register = 0
if graph.queued then register = 1 end
return { retried, more, register }
