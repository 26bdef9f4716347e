#!lua flags=allow-oom
-- abort_flow: give up a store of a flow that will not be committed (issue 34): a
-- later enqueue_flow.lua call of it found a job id taken, or the service could not
-- finish it. Deletes what the store wrote, a bounded part a call.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] flow_id: the flow   ARGV[10] token: the storing call's
-- ARGV[11] limit: most nodes deleted in this call
-- Returns { more (1 while nodes are left to delete) }
--
-- Only a store still held by this token is touched: a committed flow, or another
-- call's store, is left alone (more 0). Each node is deleted as retention deletes a
-- job (lib/graph.lua graph.prune: record, listing entry, waiting count, quota count).
-- Invariant 3: O(limit). Invariant 5: refused while the namespace's jobs are in an
-- older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local K = job_keys(ARGV, 1)
local meta, flow_id = KEYS[2], ARGV[9]
if redis.call('HGET', graph.key(meta, flow_id), 'stage') ~= ARGV[10] then return { 0 } end
graph.prune(K, meta, KEYS[1], flow_id, tonumber(ARGV[11]))
if redis.call('EXISTS', graph.key(meta, flow_id)) == 1 then return { 1 } end
return { 0 }
