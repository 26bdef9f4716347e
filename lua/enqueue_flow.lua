#!lua
-- enqueue_flow: store one part of a flow of jobs (issue 34); the flow is stored by
-- one or more calls (src/jobs/graph.rs cuts it as EnqueueBatch is cut: each call well
-- under a script's time) and runs only once the last one committed it, all or
-- nothing.
--
-- KEYS[1] namespace meta (hash: jobs, n:<queue>, stored)   <prefix>:{<ns>}:meta
-- KEYS[2] finished jobs (zset id -> finish ms)              <prefix>:{<ns>}:jdone
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] flow_id: the flow's id   ARGV[10] token: the storing call's (random)
-- ARGV[11] max_jobs: most unfinished jobs the namespace may hold (0: no limit)
-- ARGV[12] first: 1 in the first call   ARGV[13] last: 1 in the last (commits)
-- ARGV[14] total: the flow's node count
-- ARGV[15] refs: ARGV[16] ids: the first call only ('' in the others): msgpack
--          arrays of every ref and job id, every node after its dependencies
-- ARGV[17] count: the nodes in this call, n
-- ARGV[18..] node{id, queue, name, payload, headers, priority, when, when_ms,
--   max_attempts, backoff, base_ms, cap_ms, jitter, lease_ms, dedup_key, dedup_ttl_ms,
--   dedup_mode, retain, flow, ref, odf, node, waits}: 23 values per job, a job per node: the 19 of
--   enqueue_jobs.lua (dedup and retain empty: a flow's nodes have neither), then its
--   ref, its rule for a failed dependency ('' cancel, 'r' run, 's' skip), its n:
--   entry and how many dependencies it has (lib/graph.lua)
-- Returns { "stored", register }: this part is written (register: 1 to put the
--           namespace in the prune due-set: a store to give up if it is never
--           committed, or graph work queued)
--       | { "duplicate", refs, ids }: the first call found the flow committed
--         (nothing written)
--       | { "busy" }: the first call found another call storing this flow id
--       | { "lost" }: a later call found the flow no longer stored by this token (its
--         store was given up, after graph.STAGE_TTL_MS without a call)
--       | { "exists", index in this call (0-based), id }: a job id is taken; nothing
--         of this call written (the caller gives the store up: abort_flow.lua)
--       | { "quota" }: the first call found the flow would take the namespace past
--         max_jobs; nothing written
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 2 / all or nothing: every node is stored waiting, the roots too, so nothing of a
--   flow can be claimed before the last call commits it (drops `stage`, and queues
--   the sweep that readies the roots, lib/graph.lua, taking what steps it may at
--   once). A store never committed is given up by prune_jobs.lua after
--   graph.STAGE_TTL_MS (its stage_set entry, refreshed by every call), and by the
--   service at once when a later call fails (abort_flow.lua). Two calls with one flow
--   id store one flow: the second finds it busy or committed.
-- * 1 / 11: each node's record and listing entry are written as enqueue_jobs.lua
--   writes them (lib/job.lua job_create), counted waiting; the flow hash holds every
--   node's dependents and unfinished-dependency count (lib/graph.lua).
-- * 3 / 9: O(n) per call for n nodes of at most 32 (src/jobs/chunks.rs); the first
--   call checks every id (EXISTS) and the quota for the whole flow.
-- * 5: refused while the namespace's jobs are in an older layout, or while its meta
--   has lost the job layout and the jobs marker or the data (this call's queues,
--   the finished set) shows stored jobs.
-- * 7 (one clock): run times are computed from Redis TIME.

local meta, done = KEYS[1], KEYS[2]
local K = job_keys(ARGV, 1)
-- Called by the guard only when meta has no job layout: whether this call's queues
-- or the finished set hold jobs (lib/job.lua held_probe).
local function probe()
  local queues = {}
  for i = 0, tonumber(ARGV[17]) - 1 do queues[#queues + 1] = ARGV[17 + i * 23 + 2] end
  return held_probe(K, meta, done, queues)
end
local refused, layout = jobs_guard(meta, probe)
if refused then return refused end
local now = now_ms()
local flow_id, token, quota = ARGV[9], ARGV[10], tonumber(ARGV[11])
local first, last, total, n = ARGV[12] == '1', ARGV[13] == '1', tonumber(ARGV[14]),
  tonumber(ARGV[17])
local G = graph.key(meta, flow_id)
local FIELDS, AT = 23, 17
local ID, QUEUE, REF, ODF, NODE, WAITS = 1, 2, 20, 21, 22, 23

if first then
  local stage = redis.call('HMGET', G, 'refs', 'stage')
  if stage[1] and stage[2] then return { 'busy' } end
  if stage[1] then return { 'duplicate', stage[1], redis.call('HGET', G, 'ids') or '' } end
  for i, id in ipairs(cmsgpack.unpack(ARGV[16])) do
    if redis.call('EXISTS', K.job .. id) == 1 then return { 'exists', i - 1, id } end
  end
  if quota > 0 then
    local unfinished = tonumber(redis.call('HGET', meta, 'stored') or '0')
      - redis.call('ZCARD', done)
    if unfinished + total > quota then return { 'quota' } end
  end
  redis.call('HSET', G, 'nodes', total, 'open', 0, 'failed', 0, 'created', now,
    'stage', token, 'refs', ARGV[15], 'ids', ARGV[16])
elseif redis.call('HGET', G, 'stage') ~= token then
  return { 'lost' }
else
  for i = 0, n - 1 do
    local id = ARGV[AT + i * FIELDS + ID]
    if redis.call('EXISTS', K.job .. id) == 1 then return { 'exists', i, id } end
  end
end

if layout == nil then jobs_first(meta) end
local per_queue, next_n = {}, {}
for i = 0, n - 1 do
  local q = ARGV[AT + i * FIELDS + QUEUE]
  per_queue[q] = (per_queue[q] or 0) + 1
end
for q, count in pairs(per_queue) do next_n[q] = job_numbers(meta, q, count) end
local gseq = redis.call('HINCRBY', meta, 'gseq', n) - n

local fields = {}
for i = 0, n - 1 do
  local b = AT + i * FIELDS
  local id, queue, ref = ARGV[b + ID], ARGV[b + QUEUE], ARGV[b + REF]
  local waits = tonumber(ARGV[b + WAITS])
  local j = job_spec(ARGV, b, now)
  j.waiting, j.dag, j.ref, j.odf = true, flow_id, ref, ARGV[b + ODF]
  local job_n = next_n[queue]
  next_n[queue] = job_n + 1
  job_create(K, meta, now, id, job_n, gseq + i + 1, j)
  fields[#fields + 1], fields[#fields + 2] = 'n:' .. ref, ARGV[b + NODE]
  fields[#fields + 1], fields[#fields + 2] = 'i:' .. ref, id
  if waits > 0 then fields[#fields + 1], fields[#fields + 2] = 'w:' .. ref, waits end
end
if #fields > 0 then redis.call('HSET', G, unpack(fields)) end
redis.call('HINCRBY', G, 'open', n)
jobs_stored(meta, n, now) -- (the quota's count: lib/job.lua)

local register = 0
if last then
  redis.call('HDEL', G, 'stage')
  redis.call('ZREM', graph.stage_set(meta), flow_id)
  redis.call('ZADD', graph.open_set(meta), redis.call('HGET', G, 'created'), flow_id)
  register = graph.start(K, meta, done, 'r', flow_id, now)
  if graph.queued then register = 1 end
else
  redis.call('ZADD', graph.stage_set(meta), now + graph.STAGE_TTL_MS, flow_id)
  if first then register = 1 end
end
return { 'stored', register }
