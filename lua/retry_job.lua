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
local now = now_ms()
local K = job_keys(ARGV, 1)
local id = ARGV[9]
local key, r = job_at(K, id)
if not key then return r end
if r.state ~= 'dead' then return { 'state', r.state } end
if r.dag ~= '' then
  -- A node of a flow (issue 34): re-armed as RetryFlow re-arms it, with the nodes its
  -- failure cancelled or skipped (lib/graph.lua); waiting when a dependency of it is
  -- unfinished.
  graph.rearm_node(K, KEYS[2], KEYS[1], graph.key(KEYS[2], r.dag), r.dag, r.ref, now)
  local register = graph.run_item(K, KEYS[2], KEYS[1], { 'c', r.dag, r.ref, 0 }, now)
  if graph.queued then register = 1 end
  local p, packed = packed_load(key)
  local out = { 'ok', register }
  push_job(out, K, id, packed, p[P_PX])
  return out
end
redis.call('ZREM', KEYS[1], id)
retention.forget(KEYS[2], id, r) -- (lib/job.lua, issue 36)
r.state, r.attempts, r.token, r.lease_until = 'pending', 0, '', ''
r.finished, r.run_at, r.updated = '', now, now
local packed = job_save(key, r)
flow.ready(K, KEYS[2], r, true)
dead_remove(KEYS[2], id, r)
count_pending(KEYS[2], r, 1)
local out = { 'ok', 0 }
push_job(out, K, id, packed, r.px)
return out
