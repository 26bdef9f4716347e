#!lua
-- retry_flow: re-arm the failed part of a flow (issue 34).
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] flow_id: the flow
-- Returns { "missing" } | { "ok", more (1 while the sweep's work is queued), register,
--           woke (1: a node became pending) }
--
-- Clears the flow's cancel mark, then the sweep, every node after its dependencies
-- (the stored order): each dead, cancelled and skipped node is re-armed
-- (lib/graph.lua graph.rearm_node): its mark cleared so its dependents count it
-- again, attempts reset, error history kept, out of the finished set and its queue's
-- dead set; waiting while a dependency is unfinished, else pending (or delayed until
-- its run time). A dependency re-armed before its dependents is why the order
-- matters: no node is readied while a dependency it waits for is yet to be re-armed.
-- Completed nodes stay completed, results included; a finished flow runs again (out
-- of the pruner's set). At most graph.INLINE steps here; drain_graph.lua takes the
-- rest. A flow still being stored is missing. Invariant 5: refused while the
-- namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local meta, done, flow_id = KEYS[2], KEYS[1], ARGV[9]
local G = graph.key(meta, flow_id)
local head = redis.call('HMGET', G, 'refs', 'stage')
if not head[1] or head[2] then return { 'missing' } end
redis.call('HDEL', G, 'cancel')
local register = graph.start(K, meta, done, 'y', flow_id, now)
local more = 0
if redis.call('EXISTS', graph.queue(meta)) == 1 then more, register = 1, 1 end
return { 'ok', more, register, flow.woke or 0 }
