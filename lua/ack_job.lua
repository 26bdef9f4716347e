#!lua flags=allow-oom
-- ack_job: complete a claimed job, if the caller still holds its lease.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: the job id   ARGV[10] token: its lease token
-- ARGV[11] result: what the job returned (issue 30), kept with the completed job
--          ("" = none)
-- Returns { "ok", now, register (1: put the namespace in the prune due-set), the
--           job's queue (for the metrics), woke (1: a flow slot it freed may let a
--           waiting claim run: lib/flow.lua flow.finish) }
--       | { "missing" } | { "stale", state } | { "expired" }
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 4 (a lease is the only authority): only the current token of an active job whose
--   lease has not expired (deadline > Redis TIME) may complete it; anything else
--   changes nothing, so a job is never completed twice and a re-handed job is never
--   completed by its previous holder.
-- * 1: the job leaves its lease set and enters the finished set (retention) in the
--   same script that marks it completed. O(log N).
-- * 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local outcome, register = complete_job(K, KEYS[2], KEYS[1], ARGV[9], ARGV[10], now, nil,
  ARGV[11])
if outcome[1] ~= 'ok' then return outcome end
return { 'ok', now, register, outcome[2], flow.woke or 0 }
