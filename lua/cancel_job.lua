#!lua flags=allow-oom
-- cancel_job: cancel a pending or delayed job; ask the worker of an active one to
-- stop (issue 30).
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: the job id
-- Returns { "ok", register (1: put the namespace in the prune due-set), id, packed
--         record, payload (lib/job.lua push_job) } | { "missing" } | { "state", state }
--   (an active job's record comes back still active, its cancel position set)
--
-- Invariant 1 (docs/DESIGN.md): the job leaves its delayed set and enters the finished set in the
-- same script that marks it cancelled. A pending job's ready-list entry stays and is
-- dropped by the claim that meets it (the record says cancelled): removing it here
-- would be an O(N) LREM. An active job (leased to a worker) stays active under its
-- lease: only its cancel position (lib/job.lua P_CANCEL) is set, so cancelling never
-- races a worker's ack; the worker hears of it at its next extend, and whatever ends
-- the attempt then ends the job (fail_job, claim_jobs' expiry and release_jobs make
-- it cancelled, ack_job completes it). Asking twice writes nothing the second time. A
-- pending job leaves its queue's pending count here (lib/job.lua queue state).
-- O(log N). Invariant 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local id = ARGV[9]
local key, r = job_at(K, id)
if not key then return r end
if r.state == 'active' then
  local p, packed = packed_load(key)
  if p[P_CANCEL] ~= 1 then
    packed_put(p, P_CANCEL, 1)
    p[P_UPDATED] = now - p[P_CREATED]
    packed = packed_save(key, p)
  end
  local out = { 'ok', 0 }
  push_job(out, K, id, packed, p[P_PX])
  return out
end
if r.state == 'delayed' then
  redis.call('ZREM', K.delayed .. r.queue, id)
elseif r.state == 'pending' then
  count_pending(KEYS[2], r, -1)
else
  return { 'state', r.state }
end
r.state, r.finished, r.updated = 'cancelled', now, now
local packed = job_save(key, r)
local out = { 'ok', retention.finish(K, KEYS[2], KEYS[1], id, r, now) }
push_job(out, K, id, packed, r.px)
return out
