#!lua flags=allow-oom
-- cancel_flow: cancel every unfinished node of a flow (issue 34).
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] flow_id: the flow
-- Returns { "missing" } | { "ok", more (1 while the sweep's work is queued), register }
--
-- Marks the flow cancelled (field cancel): from this call on, a node readied is
-- cancelled instead (lib/graph.lua graph.release), so no node of it starts after
-- this call. Then the sweep: each waiting, pending or delayed node ends cancelled as
-- CancelJob ends it (lib/job.lua cancel_unstarted); an active node keeps its lease
-- (invariant 4: never races its worker's ack) and its cancel is asked. The sweep
-- takes at most graph.INLINE steps here; drain_graph.lua takes the rest. A flow
-- still being stored is missing. Idempotent. Invariant 5: refused while the
-- namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local meta, done, flow_id = KEYS[2], KEYS[1], ARGV[9]
local G = graph.key(meta, flow_id)
local head = redis.call('HMGET', G, 'refs', 'stage')
if not head[1] or head[2] then return { 'missing' } end
redis.call('HSET', G, 'cancel', '1')
local register = graph.start(K, meta, done, 'x', flow_id, now)
local more = 0
if redis.call('EXISTS', graph.queue(meta)) == 1 then more, register = 1, 1 end
return { 'ok', more, register }
