#!lua flags=allow-oom
-- cancel_job: cancel a pending, delayed or waiting job; ask the worker of an active
-- one to stop (issue 30). A node of a flow (issue 34) tells its dependents
-- (lib/graph.lua): they follow their rule for a failed dependency.
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
-- pending job leaves its queue's pending count here (lib/job.lua queue state;
-- cancel_unstarted).
-- O(log N). Invariant 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local K = job_keys(ARGV, 1)
local id = ARGV[9]
-- The transition itself is lib/job.lua manage.cancel (CancelJobs runs it too).
local done, refusal = manage.cancel(K, KEYS[2], KEYS[1], id, now_ms())
if not done then return refusal end
local out = { 'ok', done[1] }
push_job(out, K, id, done[2], done[3])
return out
