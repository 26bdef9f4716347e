#!lua
-- claim_jobs: lease up to max_jobs claimable jobs from a set of queues.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- KEYS[3..] claim receipt, under --redis-wait-replicas only and never with further
--          takers (list of the claimed ids, in order) <prefix>:{<ns>}:meta:claim:<token_base>: when it is the mark
--          [""] (the claim was given back before it ran, release_claim.lua) nothing is
--          claimed; else the claimed ids are pushed to it, kept RECEIPT_MS
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] token_base: lease token base (random, minted by the caller; token = base .. "." .. i)
-- ARGV[10] lease_ms: lease ms for these claims ("" = each job's own default lease)
-- ARGV[11] max_jobs: most jobs to claim
-- ARGV[12] worker: worker id
--          (ARGV[9..12] and ARGV[14] are the first taker's; a grouped call, issue 35,
--          carries more takers in ARGV[18..])
-- ARGV[13] budget: most expired leases re-handed, most delayed jobs promoted per
--          queue, and most stale ready entries dropped, in this call
-- ARGV[14] max_bytes: reply byte budget: no job is leased past the first whose reply would take
--          the jobs' bytes (lib/job.lua packed_bytes) over it
-- ARGV[15] ack_count: number of acks A carried by this claim (issue 15), applied first
-- ARGV[16] result_count: number R of those acks that carry a result (issue 30)
-- ARGV[17] group_count: number G of further takers grouped into this call (issue 35:
--          concurrent ClaimJobs of one namespace and queue set share one call)
-- ARGV[18..] group, acks, results, queues: the G further takers (token base, lease
--            ms, max jobs, worker, max bytes: 5G values), the A acks of all takers
--            (job id, lease token: 2A values), the R results (the ack's index from 0
--            in the acks, the result: 2R values), then the queue names
-- Takers are served in order, each up to its max jobs and its max bytes, every job with
-- the taker's worker, lease and a token of the taker's base; all acks go first.
-- Returns { now, next_ms, more, register, n, then per claimed job: id, its packed
--           record as stored, its payload when kept in its own key (else '')
--           (lib/job.lua push_job; src/store/packed_job.rs reads them), then per
--           queue in ARGV order: leases that expired here,
--           then per ack in ARGV order: tag, detail,
--           then per queue in ARGV order: the flow limits met (lib/flow.lua; ""
--           none, else "reason=count ..." with reason concurrency | rate |
--           throttled | queue_running | queue_rate),
--           then D, the number of claimed jobs that are nodes of a flow (issue 34),
--           and per such job: its place among the claimed jobs (from 1), its
--           dependencies (lib/graph.lua graph.deps_of),
--           then per further taker (G): how many of the n jobs are its, which
--           follow the first taker's (and each earlier taker's) in the jobs }
--   tag, detail: 'ok', the job's queue | 'missing', '' | 'stale', the job's state |
--            'expired', '' | 'corrupt', the error (lib/job.lua complete_job)
--   next_ms: earliest future delayed run or lease deadline in these queues ("" none),
--            for the wake-up timer
--   more: 1 if claimable jobs may be left in these queues after this claim
--   register: 1 to put the namespace in the prune due-set (a job went dead)
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 1 (derived indexes): each index entry met is re-validated against the job record
--   (state, queue, priority, lease deadline); dangling or stale entries are dropped.
-- * 3 (no O(N)): each queue's earliest lease deadline and delayed run are read
--   (ZRANGE 0 0, which also gives next_ms); only when one is due are expired leases
--   found by ZRANGEBYSCORE on the per-queue lease set (scored by deadline) and
--   delayed jobs by ZRANGEBYSCORE on the delayed set, each bounded by ARGV[13]; a
--   claim reads the best priority of each queue (ZRANGE 0 0),
--   pops at most what it may still claim from the head of that list (LPOP count),
--   resolves the job numbers to ids in listing buckets of at most 64 (HMGET), and
--   pushes back what it did not claim; each index is written once per call and
--   queue (the lease set, the pending count), each job record once.
-- * 4 (a crash never loses work): a claimed job is in the lease set until acked,
--   failed or re-handed; an expired lease makes it pending again here (attempt + 1 at
--   its next claim) or dead if it has used max_attempts, or cancelled when a cancel
--   was requested (issue 30: CancelJob while active; not retried).
-- * 4: each carried ack is AckJob's transition (lib/job.lua complete_job), applied
--   before anything is claimed; a refused ack changes nothing and stops nothing.
-- * 5: refused while the namespace's jobs are in an older layout.
-- * queue state (lib/job.lua): every move into or out of pending changes its queue's
--   pending count and a job going dead enters its queue's dead set, here; a paused
--   queue (one HGET per queue) is skipped entirely.
-- * 7 (one clock): Redis TIME decides what is due and what is expired.
-- * 11 (dependencies): a node of a flow is claimable only once its dependencies
--   finished (lib/graph.lua readies it); its claim reads its dependencies' marks (one
--   HMGET) and at most graph.READS records a call for their results; queued graph
--   work takes the steps the acks left (graph.INLINE a call in all).
-- * 4 (issue 29 item 11): with a receipt, a claim whose reply was lost or that the
--   replicas did not confirm can be given back by its token base alone
--   (release_claim.lua), even when the give-back ran first (its mark makes this
--   claim take nothing). One RPUSH and PEXPIRE per claim that leased jobs.
-- * 9 (bounded replies): a job the reply could not carry is not leased; it goes
--   back to the head of its list for the next claim. The first job is always leased: the
--   service refuses a payload limit that cannot fit in one message.

local K = job_keys(ARGV, 1)
local done = KEYS[1]
-- Called by the guard only when meta has no job layout: whether the claimed queues
-- or the finished set hold jobs (lib/job.lua held_probe). The queues are the last
-- values, after the acks and results.
local first_ack = 18 + 5 * tonumber(ARGV[17])
local function probe()
  local acks_n, results_n = tonumber(ARGV[15]), tonumber(ARGV[16])
  local queues = {}
  for i = first_ack + 2 * acks_n + 2 * results_n, #ARGV do queues[#queues + 1] = ARGV[i] end
  return held_probe(K, KEYS[2], done, queues)
end
local refused = jobs_guard(KEYS[2], probe)
if refused then return refused end
local now = now_ms()
local budget = tonumber(ARGV[13])
-- The taker being served (the first: ARGV[9..12], ARGV[14]; further taker ti: its 5
-- values from ARGV[13 + 5 ti]): token base, lease override (nil: each job's own),
-- max jobs, worker, max bytes. max_jobs is what all takers may take together.
local group_n = tonumber(ARGV[17])
local token_base, lease_override, max = ARGV[9], tonumber(ARGV[10]), tonumber(ARGV[11])
local worker, max_bytes = ARGV[12], tonumber(ARGV[14])
local max_jobs = max
for i = 20, first_ack - 1, 5 do max_jobs = max_jobs + tonumber(ARGV[i]) end
-- How long a claim receipt is kept: far longer than a call that lost its reply
-- takes to give the claim back.
local RECEIPT_MS = 60000
local receipt = KEYS[3]
if receipt and redis.call('LINDEX', receipt, 0) == '' then max_jobs, max = 0, 0 end
local register = 0
local expired = {}
local acks, result_count = tonumber(ARGV[15]), tonumber(ARGV[16])
local first_result = first_ack + 2 * acks
-- Results by the ARGV position of their ack's id; nil when no ack carries one, so
-- an ack without a result costs nothing for them.
local results = nil
if result_count > 0 then
  results = {}
  for i = first_result, first_result + 2 * result_count - 1, 2 do
    results[first_ack + 2 * tonumber(ARGV[i])] = ARGV[i + 1]
  end
end
local queues = {}
for i = first_result + 2 * result_count, #ARGV do queues[#queues + 1] = ARGV[i] end

-- 0. The acks this claim carries: each exactly as AckJob (invariant 4), so a worker
-- finishes its last jobs and fetches the next ones in one round trip and one script.
local acked = {}
local completions = completions_new(now, KEYS[2])
for i = first_ack, first_ack - 1 + 2 * acks, 2 do
  -- (a job with its own retention rule or of a flow is finished unbatched: its
  -- registration, e.g. graph work queued, comes back here)
  local outcome, asked = complete_job(K, KEYS[2], done, ARGV[i], ARGV[i + 1], now,
    completions, results and results[i])
  register = math.max(register, asked or 0)
  if is_error(outcome) then
    acked[#acked + 1], acked[#acked + 2] = 'corrupt', outcome.err
  else
    acked[#acked + 1], acked[#acked + 2] = outcome[1], outcome[2] or ''
  end
end
register = math.max(register, completions_flush(K, done, completions))
-- Graph work left queued (issue 34; lib/graph.lua "Bounded work"): a claim takes the
-- steps its acks left it, before it claims, so queued work advances while any worker
-- of the namespace claims, whatever became of the call that queued it (a failover, a
-- crash). One EXISTS when nothing is queued.
if redis.call('EXISTS', graph.queue(KEYS[2])) == 1 then
  register = math.max(register, graph.drain(K, KEYS[2], done, now))
end

-- 1. Expired leases: pending again (at the head of their list), or dead when out of
-- attempts.
local function reclaim(queue)
  local lkey = K.leased .. queue
  local ids = redis.call('ZRANGEBYSCORE', lkey, '-inf', now, 'LIMIT', 0, budget)
  for _, id in ipairs(ids) do
    redis.call('ZREM', lkey, id)
    local key = K.job .. id
    local r = job_load(key)
    if r and not is_error(r) and r.state == 'active' and r.queue == queue
        and r.lease_until ~= '' then
      if r.lease_until <= now then
        expired[queue] = (expired[queue] or 0) + 1
        push_error(r, r.attempts, 'lease expired', now)
        r.token, r.lease_until, r.updated = '', '', now
        if r.cancel == 1 then
          r.state, r.finished = 'cancelled', now
          job_save(key, r)
          register = math.max(register, retention.finish(K, KEYS[2], done, id, r, now))
        elseif r.attempts >= r.max_attempts then
          r.state, r.finished = 'dead', now
          job_save(key, r)
          dead_add(KEYS[2], id, r, now)
          register = math.max(register, retention.finish(K, KEYS[2], done, id, r, now))
        else
          r.state, r.run_at = 'pending', now
          job_save(key, r)
          flow.ready(K, KEYS[2], r, true)
          count_pending(KEYS[2], r, 1)
        end
        flow.finish(KEYS[2], queue, r.ckey)
      else
        redis.call('ZADD', lkey, r.lease_until, id) -- stale score: the record says later
      end
    end
  end
end

-- 2. Delayed jobs whose time has come: pending, at the tail of their list.
local function promote(queue)
  local dkey = K.delayed .. queue
  local ids = redis.call('ZRANGEBYSCORE', dkey, '-inf', now, 'LIMIT', 0, budget)
  for _, id in ipairs(ids) do
    redis.call('ZREM', dkey, id)
    local key = K.job .. id
    local r = job_load(key)
    if r and not is_error(r) and r.state == 'delayed' and r.queue == queue then
      if r.run_at > now then
        redis.call('ZADD', dkey, r.run_at, id) -- stale score: the record says later
      else
        r.state = 'pending'
        job_save(key, r)
        flow.ready(K, KEYS[2], r, false)
        count_pending(KEYS[2], r, 1)
      end
    end
  end
end

-- A paused queue is left alone: nothing of it is reclaimed, promoted or claimed, and
-- it adds nothing to next_ms or more (so no timer wakes a long-poll for it).
-- One HMGET per queue reads `paused` with the flow policy (lib/flow.lua flow.gate).
local all_queues = queues
local policies, laned = {}, {}
queues = {}
for _, q in ipairs(all_queues) do
  local paused, pol, had_lanes, marks = flow.gate(KEYS[2], q)
  if not paused then
    queues[#queues + 1] = q
    policies[q] = pol
    if had_lanes or pol.fair ~= 'f' then laned[q] = marks end
  end
end

-- The earliest score of a sorted set, nil when it is empty. O(log N).
local function head(key)
  local top = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if #top == 0 then return nil end
  return tonumber(top[2])
end

-- Each queue's earliest lease deadline and delayed run. Only a head that is due costs
-- the bounded walk (reclaim, promote), and the head is read again after it; in the
-- common case (nothing due) these two reads are all, and they also give next_ms,
-- since claiming below adds leases (soonest, below) and touches nothing else of
-- either set.
local heads = {}
for _, q in ipairs(queues) do
  local h = { leased = head(K.leased .. q), delayed = head(K.delayed .. q) }
  if h.leased and h.leased <= now then
    reclaim(q)
    h.leased = head(K.leased .. q)
  end
  if h.delayed and h.delayed <= now then
    promote(q)
    h.delayed = head(K.delayed .. q)
  end
  heads[q] = h
end

-- 3. Claiming. Each queue's best ready list is popped ahead, its share of what this
-- call may still claim (LPOP with a count), into the queue's buffer, their job numbers
-- resolved to ids a listing bucket at a time (lib/job.lua listing_ids). What is left
-- in a buffer at the end goes back to the head of its list in the same order (nothing
-- runs in between), so a call touches each list, bucket and index once, not once per
-- job.
local buffers, plain_done, skips = {}, {}, 0

-- Pops queue q's best ready list into its buffer: false when no ready list is left.
-- A registered priority whose list is gone is dropped on the way.
local function refill(q, want)
  local pkey = K.prio .. q
  while true do
    local top = redis.call('ZRANGE', pkey, 0, 0, 'WITHSCORES')
    if #top == 0 then return false end
    local list = ready_list(K, q, top[1])
    local ns = redis.call('LPOP', list, want)
    if ns then
      local ids, nums = listing_ids(K, q, ns)
      buffers[q] = { queue = q, list = list, score = tonumber(top[2]), ns = ns,
        ids = ids, nums = nums, next = 1 }
      return true
    end
    redis.call('ZREM', pkey, top[1])
  end
end

-- Queue q's buffer with its next claimable job loaded (b.id, and b.p its packed
-- array: lib/job.lua packed_load), or nil. An entry whose job is no longer the
-- pending job it was made for (a cancelled job's entry stays behind; a pruned job's
-- number no longer resolves) is dropped.
local function front(q, want)
  while skips < budget do
    local b = buffers[q]
    if b and b.p then return b end
    if b == nil or b.next > #b.ns then
      if not refill(q, want) then return nil end
      b = buffers[q]
    end
    local id = b.ids[b.next]
    local p = id and packed_load(K.job .. id)
    -- A job with a flow key waits in its lane (lib/flow.lua), never here: an entry
    -- for one is stale.
    if p and not is_error(p) and p[P_STATE] == STATE_CODE.pending and p[P_QUEUE] == q
        and p[P_N] == b.nums[b.next] and -p[P_PRIORITY] == b.score
        and (#p < P_FKEY or (p[P_FKEY] == '' and (p[P_CKEY] or '') == ''
          and (p[P_RKEY] or '') == '')) then
      b.id, b.p = id, p
      return b
    end
    b.next = b.next + 1
    skips = skips + 1
  end
  return nil
end

-- The flow side of each queue that has lanes (lib/flow.lua), and the running count
-- of each queue whose policy caps it (its lease set, now that expired leases are
-- taken back above).
local flows, running, gate = {}, {}, {}
for _, q in ipairs(queues) do
  if laned[q] then flows[q] = flow.open(K, KEYS[2], q, policies[q], now, laned[q]) end
  if policies[q].mr > 0 then running[q] = redis.call('ZCARD', K.leased .. q) end
end
local flow_done = {}
local function skip()
  skips = skips + 1
  return skips < budget
end
-- Whether candidate c goes before `best`: higher priority, then earlier enqueued.
local function better(c, best)
  return best == nil or c.score < best.score
    or (c.score == best.score and c.p[P_GSEQ] < best.p[P_GSEQ])
end

-- The reply's head (now, next_ms, more, register, count) is filled in at the end;
-- each claimed job goes straight after it.
local out = { now, '', 0, 0, 0 }
local claimed, leases, taken, soonest, graph_out = 0, {}, {}, {}, {}
local claimed_ids = {}
-- Claims with the same lease length share a deadline: its text is made once.
local until_last, until_text = nil, nil

-- The takers in turn, each until it holds its max jobs or its max bytes (its first job
-- always), or nothing is left; a taker served moves the loop to the next one. Only
-- the further takers' counts go in the reply (the first's is what is left).
local mine, bytes, full, exhausted, ti = 0, 0, false, false, 0
local counts = {}
while true do
  -- The best front across the queues and, within a queue, its plain lists and its
  -- lanes' rotation (which already chose by the queue's fairness).
  local best = nil
  if mine < max and not full and not exhausted and skips < budget then
    for _, q in ipairs(queues) do
      if not gate[q] then
        if not plain_done[q] then
          -- Each queue pops its share of what is left; one that wins more refills.
          local b = front(q, math.ceil((max_jobs - claimed) / #queues))
          if b == nil then
            plain_done[q] = true
          elseif better(b, best) then
            best = b
          end
        end
        if flows[q] and not flow_done[q] then
          local c = flow.front(flows[q], skip)
          if c == nil then
            flow_done[q] = true
          elseif better(c, best) then
            best = c
          end
        end
      end
    end
    exhausted = best == nil
  end
  local pol, cost, why, at = nil, 1, nil, nil
  if best then
    pol = policies[best.queue]
    cost = tonumber(best.p[P_COST] or '') or 1
    if pol.mr > 0 or pol.rate then
      why, at = flow.queue_blocked(KEYS[2], best.queue, pol, now, running[best.queue] or 0, cost)
    end
    if why then
      -- The queue as a whole is at its limit: nothing more of it in this call.
      gate[best.queue] = { reason = why, at = at }
      best = nil
    end
  end
  local size, deps = 0, nil
  if best then
    local p = best.p
    size = packed_bytes(K, best.id, p, true, false, true) + #worker
    -- A node of a flow (issue 34) carries its dependencies and as many of their
    -- results as the budget left holds (lib/graph.lua graph.deps_of).
    if #p >= P_DAG and p[P_DAG] ~= '' then
      local extra
      deps, extra = graph.deps_of(K, KEYS[2], p, max_bytes - bytes - size)
      size = size + extra
    end
    if mine > 0 and bytes + size > max_bytes then
      full, best = true, nil
    end
  end
  if best then
    local id, p, q = best.id, best.p, best.queue
    bytes = bytes + size
    if best.flow then
      flow.take(best.flow)
    else
      best.id, best.p, best.next = nil, nil, best.next + 1
    end
    flow.queue_take(pol, now, cost)
    if running[q] then running[q] = running[q] + 1 end
    -- The claim's change, on the array: active, leased to this worker and token.
    local created = p[P_CREATED]
    local until_ms = now + (lease_override or secs_in(p[P_LEASE_MS]))
    p[P_STATE], p[P_ATTEMPTS], p[P_UPDATED] = STATE_CODE.active, p[P_ATTEMPTS] + 1,
      now - created
    packed_put(p, P_LEASE_UNTIL, until_ms - created)
    -- Numbers as text by '%d': concatenating or passing a number makes Redis's Lua
    -- format it with '%.14g', several times the cost, once per job.
    p[P_WORKER], p[P_TOKEN] = worker, token_base .. '.' .. string.format('%d', mine + 1)
    local packed = packed_save(K.job .. id, p)
    if until_ms ~= until_last then
      until_last, until_text = until_ms, string.format('%d', until_ms)
    end
    if not leases[q] then leases[q] = {} end
    local l = leases[q]
    l[#l + 1], l[#l + 2] = until_text, id
    if not soonest[q] or until_ms < soonest[q] then soonest[q] = until_ms end
    if COUNTS_KEPT then
      taken[q] = (taken[q] or 0) + 1
    else
      count_pending(KEYS[2], { queue = q, n = p[P_N] }, -1)
    end
    mine, claimed = mine + 1, claimed + 1
    claimed_ids[claimed] = id
    push_job(out, K, id, packed, p[P_PX])
    if deps then
      graph_out[#graph_out + 1], graph_out[#graph_out + 2] = claimed, deps
    end
  elseif not why then
    -- This taker is served (its max jobs or bytes), or nothing is left: the next.
    if ti >= group_n then break end
    if ti > 0 then counts[ti] = mine end
    ti = ti + 1
    local first = 13 + 5 * ti
    token_base, lease_override = ARGV[first], tonumber(ARGV[first + 1])
    max, worker, max_bytes = tonumber(ARGV[first + 2]), ARGV[first + 3], tonumber(ARGV[first + 4])
    mine, bytes, full = 0, 0, false
  end
end
if ti > 0 then counts[ti] = mine end

for _, q in ipairs(queues) do
  if flows[q] then flow.flush(flows[q]) end
  flow.queue_flush(KEYS[2], q, policies[q], now)
  local b = buffers[q]
  if b and b.next <= #b.ns then
    local back = {}
    for i = #b.ns, b.next, -1 do back[#back + 1] = b.ns[i] end
    redis.call('LPUSH', b.list, unpack(back))
  end
  if leases[q] then redis.call('ZADD', K.leased .. q, unpack(leases[q])) end
  if taken[q] then
    redis.call('HINCRBY', queue_state(KEYS[2], q), 'pending', -taken[q])
  end
end

local next_ms, more = nil, 0
local function consider(s)
  if s == nil then return end
  if s <= now then
    more = 1
  elseif next_ms == nil or s < next_ms then
    next_ms = s
  end
end
for _, q in ipairs(queues) do
  local g = gate[q]
  if g == nil and more == 0 and (redis.call('ZCARD', K.prio .. q) > 0
      or (flows[q] and redis.call('ZCARD', flows[q].rot) > 0)) then
    more = 1
  end
  if g and g.at then consider(g.at) end
  if flows[q] then consider(flow.next_time(KEYS[2], q)) end
  consider(heads[q].delayed)
  consider(heads[q].leased)
  consider(soonest[q])
end

out[2], out[3], out[4], out[5] = next_ms or '', more, register, claimed
for _, q in ipairs(all_queues) do
  local n = expired[q] or 0
  -- An expired lease is a failed attempt in the queue's total (issue 33).
  if n > 0 then redis.call('HINCRBY', queue_state(KEYS[2], q), 'failed', n) end
  out[#out + 1] = n
end
for i = 1, #acked do out[#out + 1] = acked[i] end
-- Per queue in ARGV order: the limits met ('' none; else "reason=count ..."), for
-- dueq_flow_throttled_total.
for _, q in ipairs(all_queues) do
  local met = {}
  local F, g = flows[q], gate[q]
  if F then
    for reason, count in pairs(F.reasons) do
      met[#met + 1] = reason .. '=' .. string.format('%d', count)
    end
  end
  if g then met[#met + 1] = g.reason .. '=1' end
  out[#out + 1] = table.concat(met, ' ')
end
out[#out + 1] = #graph_out / 2
for i = 1, #graph_out do out[#out + 1] = graph_out[i] end
for i = 1, group_n do out[#out + 1] = counts[i] or 0 end
if receipt and claimed > 0 then
  redis.call('RPUSH', receipt, unpack(claimed_ids))
  redis.call('PEXPIRE', receipt, RECEIPT_MS)
end
return out
