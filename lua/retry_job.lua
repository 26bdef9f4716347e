#!lua
-- retry_job: make a dead job pending again, with its attempts reset to 0.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: the job id
-- Returns { "ok", register (1: put the namespace in the prune due-set: graph work
--           queued), id, packed record, payload (lib/job.lua push_job) } | { "missing" }
--       | { "state", state }
--
-- Invariant 1 (docs/DESIGN.md): the job leaves the finished set (so retention no longer prunes it) and
-- enters the head of its ready list in the same script that marks it pending. Its
-- error history is kept; it leaves its queue's dead set and counts as pending
-- (lib/job.lua queue state). O(log N). Invariant 5: refused while the namespace's jobs
-- are in an older layout. A node of a flow is re-armed by lib/graph.lua instead
-- (issue 34): the nodes its failure cancelled or skipped come back with it.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local K = job_keys(ARGV, 1)
local id = ARGV[9]
-- The transition itself is lib/job.lua manage.retry (RetryJobs runs it too).
local done, refusal = manage.retry(K, KEYS[2], KEYS[1], id, now_ms())
if not done then return refusal end
local out = { 'ok', done[1] }
push_job(out, K, id, done[2], done[3])
return out
