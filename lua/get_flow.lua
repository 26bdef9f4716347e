#!lua flags=allow-oom,no-writes
-- get_flow: a flow's state and a page of its nodes (issue 34).
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] flow_id: the flow   ARGV[10] from: the first node's place (0-based, in
--          the stored order: every node after its dependencies)
-- ARGV[11] limit: most nodes in the page
-- Returns { "missing" } (also while the flow is being stored: enqueue_flow.lua)
--       | { "ok", nodes, open, failed, created ms, finished ms ("" while running),
--           cancelled (1 after CancelFlow), next (the place after this page; "" when none), k, then per node: its ref,
--           its n: entry (lib/graph.lua), the ref of the dependency that ended it
--           ("" none), then its job as push_job sends it (id, packed record, ""),
--           the record "" when the job is gone (deleted by DeleteJob) }
--
-- Read-only. O(limit): one HMGET of the page's entries, one GET per node; the payload
-- is not read (a node's status has none). Invariant 5: refused while the
-- namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local K = job_keys(ARGV, 1)
local G = graph.key(KEYS[2], ARGV[9])
local from, limit = tonumber(ARGV[10]), tonumber(ARGV[11])
local head = redis.call('HMGET', G, 'nodes', 'open', 'failed', 'created', 'finished', 'refs',
  'stage', 'cancel')
if not head[1] or head[7] then return { 'missing' } end
local refs = cmsgpack.unpack(head[6])
local last = math.min(#refs, from + limit)
local out = { 'ok', tonumber(head[1]), tonumber(head[2]), tonumber(head[3]), head[4],
  head[5] or '', head[8] == '1' and 1 or 0, last < #refs and last or '',
  math.max(last - from, 0) }
for i = from + 1, last do
  local ref = refs[i]
  local got = redis.call('HMGET', G, 'n:' .. ref, 'c:' .. ref)
  local node = cmsgpack.unpack(got[1])
  out[#out + 1], out[#out + 2], out[#out + 3] = ref, got[1], got[2] or ''
  local packed = redis.call('GET', K.job .. node[1])
  out[#out + 1], out[#out + 2], out[#out + 3] = node[1], packed or '', ''
end
return out
