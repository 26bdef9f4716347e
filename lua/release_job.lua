#!lua flags=allow-oom
-- release_job: ReleaseJob (issue 36): end an active job's lease now, without its
-- lease token; an operator takes back a job its worker is stuck on.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: the job id
-- ARGV[10] count: "1" = count the released attempt (dead at max_attempts), "" = give
--          it back
-- ARGV[11] reason: recorded in the job's error history (the service fills in the
--          default text and bounds its length)
-- Returns { "ok", register (1: put the namespace in the prune due-set), id, packed
--         record, payload (lib/job.lua push_job) } | { "missing" } | { "state", state }
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 4 (a lease is the only authority): the transition is release_jobs.lua's
--   (lib/job.lua lease_end): the token is cleared in the same script that makes the
--   job pending, so the holder's ack, fail or extend after it is refused as stale
--   (ABORTED), and one that ran before it finished the job, which this then refuses
--   (not active). Pending again at the head of its ready list; a cancel-requested job
--   ends cancelled; with count, dead at max_attempts, like a lease expiry.
-- * 1: lease set, ready list, pending count, dead and finished sets follow the record
--   in this script. O(log N).
-- * 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local id = ARGV[9]
local key, r = job_at(K, id)
if not key then return r end
if r.state ~= 'active' then return { 'state', r.state } end
local packed, register = lease_end(K, KEYS[1], KEYS[2], key, id, r, now, ARGV[10] == '1',
  ARGV[11])
local out = { 'ok', register }
push_job(out, K, id, packed, r.px)
return out
