#!lua flags=allow-oom
-- drain_graph: take the next steps of a namespace's queued graph work (issue 34).
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- Returns { more (1 while work is queued), register (1: put the namespace in the
--           prune due-set: a flow finished), woke (1: a node became pending) }
--
-- The work a script left for later (lib/graph.lua "Bounded work"): the calls that
-- started it (EnqueueFlow, CancelFlow, RetryFlow) run this until nothing is left,
-- and the pruner (prune_jobs.lua) takes the same steps for the rest. At most
-- graph.INLINE steps a call (invariant 9). Invariant 5: refused while the
-- namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local register = graph.drain(K, KEYS[2], KEYS[1], now)
local more = 0
if redis.call('EXISTS', graph.queue(KEYS[2])) == 1 then more = 1 end
return { more, register, flow.woke or 0 }
