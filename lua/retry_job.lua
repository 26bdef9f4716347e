#!lua
-- retry_job: make a dead job pending again, with its attempts reset to 0.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: the job id
-- Returns { "ok", id, packed record, payload (lib/job.lua push_job) } | { "missing" }
--       | { "state", state }
--
-- Invariant 1 (docs/DESIGN.md): the job leaves the finished set (so retention no longer prunes it) and
-- enters the head of its ready list in the same script that marks it pending. Its
-- error history is kept; it leaves its queue's dead set and counts as pending
-- (lib/job.lua queue state). O(log N). Invariant 5: refused while the namespace's jobs
-- are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local id = ARGV[9]
local key, r = job_at(K, id)
if not key then return r end
if r.state ~= 'dead' then return { 'state', r.state } end
redis.call('ZREM', KEYS[1], id)
retention.forget(KEYS[2], id, r) -- (lib/job.lua, issue 36)
r.state, r.attempts, r.token, r.lease_until = 'pending', 0, '', ''
r.finished, r.run_at, r.updated = '', now, now
local packed = job_save(key, r)
flow.ready(K, KEYS[2], r, true)
dead_remove(KEYS[2], id, r)
count_pending(KEYS[2], r, 1)
local out = { 'ok' }
push_job(out, K, id, packed, r.px)
return out
