-- graph: job dependencies (issue 34), prepended after flow.lua to every job script
-- (src/store/script.rs). It fills in the `graph` table job.lua declares.
--
-- A flow is a directed acyclic graph of up to 1,000 jobs of one namespace (so of one
-- Redis Cluster slot). Each node is an ordinary job whose record names its flow
-- (position dag), its ref (ref) and its rule for a failed dependency (odf: ''
-- cancel, 'r' run, 's' skip). Besides the records, keys composed from meta (keys.rs
-- `flow_*`; a library test pins them):
--   graph.key(meta, id)      hash meta .. ':dag:' .. id, the flow:
--     nodes      the node count            created    epoch ms
--     open       nodes whose t: is unset   failed     nodes marked 'f' or 'x'
--     finished   epoch ms once open reached 0 (absent while running)
--     refs, ids  msgpack arrays of the refs and job ids, every node after its
--                dependencies (src/jobs/graph.rs orders them)
--     stage      the storing call's token while enqueue_flow.lua's calls store it
--                (absent once the flow is committed)
--     cancel     '1' after CancelFlow (RetryFlow clears it): a node readied then is
--                cancelled instead
--     p          prune_jobs.lua's place in `ids` while it deletes the flow
--     i:<ref>    the node's job id
--     n:<ref>    msgpack { job id, { after refs }, { dependent refs }, { after ids },
--                dependents' rules (one letter each, in their order: 'c' cancel, 'r'
--                run, 's' skip) }
--     w:<ref>    how many of the node's dependencies have no t: mark
--     t:<ref>    how it finished: 'o' completed, 's' skipped, 'f' dead, 'x' cancelled
--                (graph.MARK; 'f' and 'x' fail its dependents): the node
--                finished and its dependents' counts were taken down
--     c:<ref>    the ref of the failed dependency that cancelled or skipped it
--   graph.open_set(meta)   zset meta .. ':dags'       flow id -> created ms (running)
--   graph.done_set(meta)   zset meta .. ':dagsdone'   flow id -> finished ms: for
--     prune_jobs.lua, which deletes a flow's nodes together after the retention age
--   graph.stage_set(meta)  zset meta .. ':dagstage'   flow id -> ms when an unfinished
--     store is given up (prune_jobs.lua deletes what it wrote)
--   graph.queue(meta)      list meta .. ':dagq'       graph work left for later calls
--
-- The one invariant: w:<ref> = the number of the node's dependencies without a t:
-- mark. Marking X (graph.settle, once per finish: HSETNX) takes one off each
-- dependent's count; clearing the mark (graph.rearm) adds it back. A waiting node
-- whose count is 0 has every dependency finished and is readied by the call that
-- brought it to 0 (invariant 11).
--
-- Bounded work (invariant 9): a script does at most graph.INLINE node steps (a
-- dependent counted down, a node readied, ended or re-armed) of graph work; what is
-- left goes to the namespace's queue as an item that says where to continue, and
-- graph.queued tells the script to return register = 1: the service then puts the
-- namespace in the prune due-set, due now, and at once takes the queued steps with
-- drain_graph.lua calls (src/effects.rs Context::drain_graph, which wakes its claims
-- for what they ready); every claim of the namespace (claim_jobs.lua) and the
-- pruner's next visit (prune_jobs.lua, graph.drain) take steps too, so queued work
-- advances whatever became of the call that queued it (a failover, a crash). The
-- queue is in Redis: a crash between calls loses no step.
-- Queue items (msgpack arrays):
--   { 's', flow, ref, state, id, i }  tell node ref's dependents from the i+1-th on
--   { 'r', flow, i }   ready the roots from the i+1-th node on (a flow just stored)
--   { 'x', flow, i }   cancel the unfinished nodes from the i+1-th on (CancelFlow)
--   { 'y', flow, i }   re-arm the failed nodes from the i+1-th on (RetryFlow)
--   { 'c', flow, ref, i } re-arm the dependents that node ref's failure ended, from
--                      the i+1-th on (RetryJob of a node)
--
-- graph.finished(K, meta, done, id, r, now) -> register: retention.finish's hook for
--   a node that just finished (record r saved): it enters the finished set above
--   every finish time (RULE_BASE + now: the server's age and count never prune it),
--   and graph.settle tells its dependents. 1 when the flow finished or work is queued.
-- graph.rearm_node(K, meta, done, G, flow_id, ref, now) -> 1 if it re-armed node ref
--   (dead, cancelled or skipped): its mark is cleared, it waits or runs by its count.
-- graph.drain(K, meta, done, now) -> 1 when queued work is left after this call's
--   steps.

graph.INLINE = 64
-- Each finished state's t: mark, and back (to a state code, lib/job.lua STATE_CODE).
graph.MARK = { completed = 'o', skipped = 's', dead = 'f', cancelled = 'x' }
graph.MARKED = { o = 4, s = 8, f = 5, x = 6 }
-- Dependency records a claim call reads for their results (graph.deps_of), all its
-- claimed nodes together; past it a completed dependency's result is left to GetJob.
graph.READS_PER_CALL = 200
graph.READS = graph.READS_PER_CALL
graph.spent = 0
graph.queued = false
-- Per-call state (lib/job.lua job_begin says why): the budgets above and the flag.
local function graph_begin()
  graph.READS, graph.spent, graph.queued = graph.READS_PER_CALL, 0, false
end
graph.STAGE_TTL_MS = 60000

function graph.key(meta, id) return meta .. ':dag:' .. id end
function graph.open_set(meta) return meta .. ':dags' end
function graph.done_set(meta) return meta .. ':dagsdone' end
function graph.stage_set(meta) return meta .. ':dagstage' end
function graph.queue(meta) return meta .. ':dagq' end

-- The node's n: entry: { job id, after refs, dependent refs, after ids }.
function graph.node(G, ref)
  local raw = redis.call('HGET', G, 'n:' .. ref)
  if not raw then return nil end
  return cmsgpack.unpack(raw)
end

function graph.ok(state) return state == 'completed' or state == 'skipped' end
function graph.failed(mark) return mark == 'f' or mark == 'x' end

-- Whether this call may take another step; counts it.
function graph.step()
  if graph.spent >= graph.INLINE then return false end
  graph.spent = graph.spent + 1
  return true
end

-- Leaves `item` for a later call (at the front: it continues what was under way).
function graph.later(meta, item)
  redis.call('LPUSH', graph.queue(meta), cmsgpack.pack(item))
  graph.queued = true
end

function graph.finished(K, meta, done, id, r, now)
  redis.call('ZADD', done, string.format('%d', retention.RULE_BASE + now), id)
  local register = graph.settle(K, meta, done, r.dag, r.ref, r.state, id, now, nil)
  if graph.queued then register = 1 end
  return register
end

-- The node at `ref` loaded: its key and record (nil when gone or corrupt). Its id is
-- read alone (i:), not with its n: entry, which holds a whole fan-in's refs.
function graph.load(K, G, ref)
  local id = redis.call('HGET', G, 'i:' .. ref)
  if not id then return nil end
  local key = K.job .. id
  local r = job_load(key)
  if r == nil or is_error(r) then return nil end
  return key, r
end

-- Node r (waiting, at key) ends without running: cancelled or skipped, `why` in its
-- error history, `cause` (a dependency's ref, or '') recorded; then settled.
function graph.end_node(K, meta, done, G, key, r, state, why, cause, now)
  count_state(meta, r, 'waiting', -1)
  push_error(r, r.attempts, why, now)
  r.state, r.finished, r.updated = state, now, now
  job_save(key, r)
  local id = string.sub(key, #K.job + 1)
  redis.call('ZADD', done, string.format('%d', retention.RULE_BASE + now), id)
  if cause ~= '' then redis.call('HSET', G, 'c:' .. r.ref, cause) end
  return graph.settle(K, meta, done, r.dag, r.ref, state, id, now, nil)
end

-- Waiting node r (at key) runs: pending (delayed while its own run time is later),
-- counted, in the ready indexes (flow.ready). In a cancelled flow it is cancelled.
function graph.release(K, meta, done, G, key, r, now)
  if redis.call('HGET', G, 'cancel') == '1' then
    return graph.end_node(K, meta, done, G, key, r, 'cancelled', 'its flow was cancelled',
      '', now)
  end
  count_state(meta, r, 'waiting', -1)
  r.updated = now
  if r.run_at > now then
    r.state = 'delayed'
    job_save(key, r)
    redis.call('ZADD', K.delayed .. r.queue, r.run_at, string.sub(key, #K.job + 1))
  else
    r.state, r.run_at = 'pending', now
    job_save(key, r)
    flow.ready(K, meta, r, false)
    count_pending(meta, r, 1)
  end
  flow.woke = 1
  return 0
end

-- Node x finished in x_state: marks it (from = nil: the call that finished it), then
-- tells its dependents from the from+1-th on (a queued continuation: from >= 0, 0
-- too when the finishing call had no step left for the first), while this call may
-- take steps. Returns 1 when the flow finished.
function graph.settle(K, meta, done, flow_id, x, x_state, x_id, now, from)
  local G = graph.key(meta, flow_id)
  local ok = graph.ok(x_state)
  local register = 0
  local fresh = from == nil
  from = from or 0
  if fresh then
    if redis.call('HSETNX', G, 't:' .. x, graph.MARK[x_state] or 'f') == 0 then return 0 end
    if not ok then redis.call('HINCRBY', G, 'failed', 1) end
    if redis.call('HINCRBY', G, 'open', -1) == 0 and not redis.call('HGET', G, 'stage') then
      redis.call('HSET', G, 'finished', now)
      redis.call('ZREM', graph.open_set(meta), flow_id)
      redis.call('ZADD', graph.done_set(meta), now, flow_id)
      register = 1
    end
  end
  local node = graph.node(G, x)
  if not node then return register end
  -- A continuation whose node was re-armed since (its mark cleared or changed) only
  -- takes its counts down, which the re-arm added back.
  local live = fresh or redis.call('HGET', G, 't:' .. x) == (graph.MARK[x_state] or 'f')
  local next = node[3]
  for i = from + 1, #next do
    if not graph.step() then
      graph.later(meta, { 's', flow_id, x, x_state, x_id, i - 1 })
      return register
    end
    local d = next[i]
    local w = redis.call('HINCRBY', G, 'w:' .. d, -1)
    -- A dependency that finished well changes nothing for a dependent still waiting
    -- on others: only the count (a fan-in's children cost one HINCRBY each).
    if live and (w <= 0 or not ok) and redis.call('HEXISTS', G, 't:' .. d) == 0 then
      local key, r = graph.load(K, G, d)
      if key and r.state == 'waiting' then
        local why = 'dependency ' .. x .. ' (job ' .. x_id .. ') ended ' .. x_state
        local ended = nil
        if not ok and r.odf ~= 'r' then ended = (r.odf == 's') and 'skipped' or 'cancelled' end
        if ended then
          register = math.max(register,
            graph.end_node(K, meta, done, G, key, r, ended, why, x, now))
        elseif w <= 0 then
          register = math.max(register, graph.release(K, meta, done, G, key, r, now))
        end
      end
    end
  end
  return register
end

-- A node back to its rule after a re-arm or a store: ended again when a dependency
-- it may not run after has failed (rule cancel or skip), waiting while its count is
-- above 0, else released. r is waiting (counted) when called.
function graph.place(K, meta, done, G, key, r, node, now)
  if r.odf ~= 'r' and #node[2] > 0 then
    local fields = {}
    for i, a in ipairs(node[2]) do fields[i] = 't:' .. a end
    local marks = redis.call('HMGET', G, unpack(fields))
    for i, mark in ipairs(marks) do
      if graph.failed(mark) then
        local a = node[2][i]
        return graph.end_node(K, meta, done, G, key, r, (r.odf == 's') and 'skipped' or 'cancelled',
          'dependency ' .. a .. ' (job ' .. node[4][i] .. ') had failed', a, now)
      end
    end
  end
  if tonumber(redis.call('HGET', G, 'w:' .. r.ref) or '0') > 0 then return 0 end
  return graph.release(K, meta, done, G, key, r, now)
end

function graph.rearm_node(K, meta, done, G, flow_id, ref, now)
  local key, r = graph.load(K, G, ref)
  if not key or not (r.state == 'dead' or r.state == 'cancelled' or r.state == 'skipped') then
    return 0
  end
  local node = graph.node(G, ref)
  local mark = redis.call('HGET', G, 't:' .. ref)
  if mark then
    redis.call('HDEL', G, 't:' .. ref, 'c:' .. ref)
    if graph.failed(mark) then redis.call('HINCRBY', G, 'failed', -1) end
    if redis.call('HINCRBY', G, 'open', 1) == 1 then
      redis.call('HDEL', G, 'finished')
      redis.call('ZREM', graph.done_set(meta), flow_id)
      redis.call('ZADD', graph.open_set(meta), redis.call('HGET', G, 'created') or now, flow_id)
    end
    -- Each dependent counts it again; one already made ready waits again (its ready
    -- entry is dropped by the claim that meets it: the record says waiting). Only a
    -- dependent of rule run can have been ready while this node was failed, and only
    -- one whose count was 0: the others cost one HINCRBY.
    local rules = node[5] or ''
    for i, d in ipairs(node[3]) do
      if redis.call('HINCRBY', G, 'w:' .. d, 1) == 1 and string.byte(rules, i) == 114 then
        local dkey, dr = graph.load(K, G, d)
        if dkey and (dr.state == 'pending' or dr.state == 'delayed') then
          if dr.state == 'delayed' then
            redis.call('ZREM', K.delayed .. dr.queue, string.sub(dkey, #K.job + 1))
          else
            count_pending(meta, dr, -1)
          end
          dr.state, dr.updated = 'waiting', now
          job_save(dkey, dr)
          count_state(meta, dr, 'waiting', 1)
        end
      end
    end
  end
  local id = node[1]
  redis.call('ZREM', done, id)
  if r.state == 'dead' then dead_remove(meta, id, r) end
  r.attempts, r.finished, r.cancel, r.state, r.updated = 0, '', '', 'waiting', now
  job_save(key, r)
  count_state(meta, r, 'waiting', 1)
  graph.place(K, meta, done, G, key, r, node, now)
  return 1
end

-- A sweep over a flow's nodes in stored order, from the i+1-th: `visit(ref)` for each
-- while this call may take steps; else the item is left to continue.
function graph.sweep(K, meta, G, kind, flow_id, from, visit)
  local refs = redis.call('HGET', G, 'refs')
  if not refs then return end
  refs = cmsgpack.unpack(refs)
  for i = from + 1, #refs do
    if not graph.step() then
      graph.later(meta, { kind, flow_id, i - 1 })
      return
    end
    visit(refs[i])
  end
end

-- Runs one queued item.
function graph.run_item(K, meta, done, item, now)
  local kind, flow_id = item[1], item[2]
  local G = graph.key(meta, flow_id)
  if kind == 's' then
    return graph.settle(K, meta, done, flow_id, item[3], item[4], item[5], now, item[6])
  end
  local register = 0
  if kind == 'c' then
    local node = graph.node(G, item[3])
    for i = (item[4] or 0) + 1, node and #node[3] or 0 do
      if not graph.step() then
        graph.later(meta, { 'c', flow_id, item[3], i - 1 })
        break
      end
      local d = node[3][i]
      if redis.call('HGET', G, 'c:' .. d) == item[3]
          and graph.rearm_node(K, meta, done, G, flow_id, d, now) == 1 then
        graph.later(meta, { 'c', flow_id, d, 0 })
      end
    end
    return 0
  end
  graph.sweep(K, meta, G, kind, flow_id, item[3], function(ref)
    -- A stored flow's roots: only a node no dependency holds is looked at.
    if kind == 'r' and tonumber(redis.call('HGET', G, 'w:' .. ref) or '0') > 0 then return end
    local key, r = graph.load(K, G, ref)
    if not key then return end
    if kind == 'r' then
      if r.state == 'waiting' then
        register = math.max(register, graph.place(K, meta, done, G, key, r, graph.node(G, ref), now))
      end
    elseif kind == 'x' then
      if r.state == 'waiting' or r.state == 'pending' or r.state == 'delayed' then
        local _, finished = cancel_unstarted(K, meta, done, key, string.sub(key, #K.job + 1), r, now)
        register = math.max(register, finished)
      elseif r.state == 'active' then
        cancel_request(key, now)
      end
    elseif kind == 'y' then
      graph.rearm_node(K, meta, done, G, flow_id, ref, now)
    end
  end)
  return register
end

function graph.drain(K, meta, done, now)
  local register = 0
  local q = graph.queue(meta)
  while graph.spent < graph.INLINE do
    local raw = redis.call('LPOP', q)
    if not raw then break end
    register = math.max(register, graph.run_item(K, meta, done, cmsgpack.unpack(raw), now))
  end
  if redis.call('EXISTS', q) == 1 then
    graph.queued = true
    return 1
  end
  return register
end

-- Starts a sweep (CancelFlow 'x', RetryFlow 'y', a stored flow's roots 'r') and
-- takes what steps this call may; returns register.
function graph.start(K, meta, done, kind, flow_id, now)
  return graph.run_item(K, meta, done, { kind, flow_id, 0 }, now)
end

-- graph.deps_of(K, meta, p, budget) -> the dependencies of claimed node p (its packed
--   array), msgpack { { ref, job id, state code, result | false }, ... } in the order
--   of its `after` (each state from its t: mark, one HMGET for all; 0 when unmarked),
--   each completed one's result included while the results so far fit in `budget`
--   bytes and this call has record reads left (graph.READS; false: read it with
--   GetJob); and the bytes that takes.
function graph.deps_of(K, meta, p, budget)
  local G = graph.key(meta, p[P_DAG])
  local node = graph.node(G, p[P_REF])
  local out, used = {}, 0
  if node and #node[2] > 0 then
    local refs, ids = node[2], node[4]
    local fields = {}
    for i, a in ipairs(refs) do fields[i] = 't:' .. a end
    local marks = redis.call('HMGET', G, unpack(fields))
    for i = 1, #refs do
      local code, result = graph.MARKED[marks[i]] or 0, false
      if code == STATE_CODE.completed and graph.READS > 0 then
        graph.READS = graph.READS - 1
        local q = packed_load(K.job .. ids[i])
        local got = (q and not is_error(q) and q[P_RESULT]) or ''
        if used + #got <= budget then result, used = got, used + #got end
      end
      out[i] = { refs[i], ids[i], code, result }
      used = used + #refs[i] + #ids[i] + 8
    end
  end
  local blob = cmsgpack.pack(out)
  return blob, #blob
end

-- graph.prune(K, meta, done, flow_id, budget) -> nodes visited: deletes up to budget
--   nodes of a flow (a finished one past the retention age, or an unfinished store
--   given up), from where the last call stopped (field `p`), each as retention
--   deletes a job (lib/job.lua job_remove); the flow hash and its set entries go with
--   the last.
function graph.prune(K, meta, done, flow_id, budget)
  local G = graph.key(meta, flow_id)
  local got = redis.call('HMGET', G, 'ids', 'p')
  if not got[1] then
    redis.call('ZREM', graph.done_set(meta), flow_id)
    redis.call('ZREM', graph.stage_set(meta), flow_id)
    return 0
  end
  local ids = cmsgpack.unpack(got[1])
  local from = tonumber(got[2] or '0')
  local last = math.min(#ids, from + budget)
  for i = from + 1, last do
    local r = job_load(K.job .. ids[i])
    if r and not is_error(r) and r.dag == flow_id then
      job_remove(K, meta, done, ids[i], r, true)
    end
  end
  if last >= #ids then
    redis.call('DEL', G)
    redis.call('ZREM', graph.done_set(meta), flow_id)
    redis.call('ZREM', graph.stage_set(meta), flow_id)
  else
    redis.call('HSET', G, 'p', last)
  end
  return math.max(last - from, 1)
end
