#!lua
-- migrate_graph: Migrate's check and repair of job dependencies (issue 34,
-- lib/graph.lua) over a namespace's running flows, one bounded step per call; a dry
-- run counts what it would repair and writes nothing.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- KEYS[3] lock                                    <prefix>:{<ns>}:migrate_lock
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] token: lock token   ARGV[10] dry_run: "1" = dry run (write nothing)
-- ARGV[11] score: the cursor's flow created ms ("" = from the first flow)
-- ARGV[12] flow: the cursor's flow id   ARGV[13] index: its nodes already checked
-- ARGV[14] batch: most steps per call (a node, or a dependency of a waiting node)
-- Returns { "ok", done (1 once every running flow was visited), score, flow, index
--           (the next cursor), visited, stranded, untold, miscounted, register (1:
--           put the namespace in the prune due-set: graph work was queued or a flow
--           finished), problem ("" none) }
--       | { "lost" } (the Migrate lock is not ours: nothing written)
--
-- The flows are those of zset meta:dags (running, by created ms); a flow still being
-- stored (field `stage`) or with work in the graph queue (meta:dagq: its counts are
-- being taken down by later calls) is passed over; so is every flow while the queue
-- holds more than QUEUE_SCAN items (reported as a problem). Each node is judged from
-- the records, by the one invariant of lib/graph.lua (w:<ref> = the node's
-- dependencies without a t: mark):
--   stranded    a WAITING node whose dependencies all have a t: mark, or one with a
--               failed ('f' or 'x') dependency whose rule is not run: its count is set to
--               the recount and it is placed by its rule (graph.place: readied,
--               cancelled or skipped), as the call that finished its last dependency
--               would have done
--   untold      a finished node (completed, skipped, dead, cancelled) without a t:
--               mark: its dependents were never told; it is settled (graph.settle)
--   miscounted  a WAITING node whose w: count is not the recount (any other): set
-- Repairs take the graph's bounded steps (graph.INLINE); what is left is queued in
-- meta:dagq as any script leaves it, and the call stops after that node (register
-- 1): the caller drains the queue (drain_graph.lua) before the next call. Invariants: 11 (no node waits
-- forever), 3 (O(batch) per call), 5 (refused while the jobs are in an older
-- layout); a dry run takes no lock and writes nothing.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local dry = ARGV[10] == '1'
if not dry and redis.call('GET', KEYS[3]) ~= ARGV[9] then return { 'lost' } end
local now = now_ms()
local K = job_keys(ARGV, 1)
local meta, done = KEYS[2], KEYS[1]
local score, cursor_flow, index = ARGV[11], ARGV[12], tonumber(ARGV[13]) or 0
local batch = math.max(tonumber(ARGV[14]) or 1, 1)
local QUEUE_SCAN, FLOWS = 200, 100
local open = graph.open_set(meta)

local out = { 'ok', 0, '', '', 0, 0, 0, 0, 0, 0, '' }
local visited, stranded, untold, miscounted, register = 0, 0, 0, 0, 0

-- Flows with queued graph work: their counts are under way, not wrong.
local busy = {}
local queued = redis.call('LLEN', graph.queue(meta))
if queued > QUEUE_SCAN then
  out[2] = 1
  out[11] = string.format('%d graph work items queued (over %d): flows not checked; ' ..
    'run Migrate again once the pruner drained them', queued, QUEUE_SCAN)
  return out
end
for _, raw in ipairs(redis.call('LRANGE', graph.queue(meta), 0, -1)) do
  local ok, item = pcall(cmsgpack.unpack, raw)
  if ok and type(item) == 'table' and item[2] then busy[tostring(item[2])] = true end
end

-- Where to start: the cursor's flow at its index; else (it finished since) the first
-- flow after it.
local start, skip_to = 0, nil
if score ~= '' then
  local rank = redis.call('ZRANK', open, cursor_flow)
  if rank and redis.call('ZSCORE', open, cursor_flow) == score then
    start = rank
  else
    start = redis.call('ZCOUNT', open, '-inf', '(' .. score)
    skip_to = { tonumber(score), cursor_flow }
    index = 0
  end
end

-- Node ref of flow G (flow_id): judged, and repaired unless a dry run.
local function check(G, flow_id, ref)
  local key, r = graph.load(K, G, ref)
  visited = visited + 1
  if not key or r.dag ~= flow_id then return end
  local mark = redis.call('HGET', G, 't:' .. ref)
  if mark then return end
  if r.state == 'waiting' then
    local node = graph.node(G, ref)
    if not node then return end
    local after = node[2]
    local count, failed = 0, false
    if #after > 0 then
      local fields = {}
      for i, a in ipairs(after) do fields[i] = 't:' .. a end
      for _, m in ipairs(redis.call('HMGET', G, unpack(fields))) do
        if not m then count = count + 1 elseif graph.failed(m) then failed = true end
      end
    end
    visited = visited + #after
    local w = tonumber(redis.call('HGET', G, 'w:' .. ref) or '0')
    local strand = count == 0 or (failed and r.odf ~= 'r')
    if strand then
      stranded = stranded + 1
    elseif w ~= count then
      miscounted = miscounted + 1
    end
    if dry then return end
    if w ~= count then redis.call('HSET', G, 'w:' .. ref, count) end
    if strand then
      register = math.max(register, graph.place(K, meta, done, G, key, r, node, now))
    end
  elseif r.state == 'completed' or r.state == 'skipped' or r.state == 'dead'
      or r.state == 'cancelled' then
    untold = untold + 1
    if not dry then
      register = math.max(register, graph.settle(K, meta, done, flow_id, ref, r.state,
        string.sub(key, #K.job + 1), now, nil))
    end
  end
end

local flows = redis.call('ZRANGE', open, start, start + FLOWS - 1, 'WITHSCORES')
local finished_walk = (#flows / 2) < FLOWS
local stopped = false
for f = 1, #flows, 2 do
  local flow_id, created = flows[f], flows[f + 1]
  local passed = skip_to and tonumber(created) == skip_to[1] and flow_id <= skip_to[2]
  local G = graph.key(meta, flow_id)
  if not passed and not busy[flow_id] and not redis.call('HGET', G, 'stage') then
    local refs = redis.call('HGET', G, 'refs')
    refs = refs and cmsgpack.unpack(refs) or {}
    for i = index + 1, #refs do
      if visited >= batch then
        out[3], out[4], out[5] = created, flow_id, i - 1
        stopped = true
        break
      end
      check(G, flow_id, refs[i])
      -- A repair left graph work queued: the counts it will take down are under
      -- way, so the walk stops here; the caller drains the queue, then goes on.
      if graph.queued then
        out[3], out[4], out[5] = created, flow_id, i
        stopped = true
        break
      end
    end
  else
    visited = visited + 1
  end
  if stopped then break end
  index = 0
  out[3], out[4], out[5] = created, flow_id, 0
  if visited >= batch and f + 1 < #flows then
    -- The next call starts after this flow: its index is its node count.
    local refs = redis.call('HGET', G, 'refs')
    out[5] = refs and #cmsgpack.unpack(refs) or 0
    stopped = true
    break
  end
end
if not stopped then
  if finished_walk then
    out[2] = 1
  elseif #flows > 0 then
    -- The next page starts after the last flow of this one.
    local G = graph.key(meta, out[4])
    local refs = redis.call('HGET', G, 'refs')
    out[5] = refs and #cmsgpack.unpack(refs) or 0
  end
end
if graph.queued then register = 1 end
out[6], out[7], out[8], out[9], out[10] = visited, stranded, untold, miscounted, register
return out
