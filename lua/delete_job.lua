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
local key = K.job .. id
local _, packed = packed_load(key)
local r = job_load(key)
if r == nil then return { 'missing' } end
if is_error(r) then return r end
if r.state == 'active' then return { 'state', r.state } end
-- A flow's node that has not finished (issue 34): its dependents wait on it, so it is
-- cancelled (CancelJob, CancelFlow), not deleted.
if r.dag ~= '' and (r.state == 'pending' or r.state == 'delayed' or r.state == 'waiting') then
  return { 'state', r.state }
end
local out = { 'ok' }
push_job(out, K, id, packed, r.px)
job_remove(K, KEYS[2], KEYS[1], id, r, false)
return out
