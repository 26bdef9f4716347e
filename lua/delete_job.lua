#!lua flags=allow-oom
-- delete_job: DeleteJob (issue 36): remove one job no worker holds, from every index.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: the job id
-- Returns { "ok", id, packed record, payload (lib/job.lua push_job): the job as it was
--         just before } | { "missing" } | { "state", "active" }
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 1: the record and every entry naming it go in this one script (lib/job.lua
--   job_remove: payload, listing, delayed, finished and dead sets, pending count,
--   dedup key when it still names this job, the quota's count); a pending job's
--   ready-list entry no longer resolves and is dropped by the claim that meets it.
--   A watcher hears it is gone (version 0). O(log N).
-- * 4: an active job is refused: its lease is the only authority over it, so it
--   must be released (release_job.lua) or finished first.
-- * 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local K = job_keys(ARGV, 1)
local id = ARGV[9]
-- The removal itself is lib/job.lua manage.delete (DeleteJobs runs it too).
local out = { 'ok' }
local done, refusal = manage.delete(K, KEYS[2], KEYS[1], id, nil, nil, out)
if not done then return refusal end
return out
