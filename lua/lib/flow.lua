-- flow: flow control (issue 32), prepended after job.lua to every job script
-- (src/store/script.rs): concurrency keys, rate limits and fairness, all checked
-- inside the claim before a lease is granted, so a job over a limit is never leased.
--
-- A job may carry a fairness key, a concurrency key and a rate key (record positions
-- fkey, ckey, rkey; cost, '' for 1). Its LANE is the combination of the three
-- (flow.lane). A ready job with any key — or any ready job of a queue whose policy is
-- round-robin or weighted — waits in its lane, not in the plain ready lists; every
-- other job takes the plain path of lib/job.lua untouched. A lane is in exactly one
-- place while it holds entries:
--   in the queue's rotation (eligible), or
--   parked on a concurrency key at its limit (set 'w' .. ckey: the script that frees
--     a slot of that key puts its lanes back, flow.finish), or
--   parked until a time (zset 't': a rate window opens or a throttle ends; the claim
--     puts due lanes back first, and its next_ms wakes long-polls then).
-- An empty lane is nowhere and costs nothing: idle keys hold no Redis memory.
--
-- Keys, composed from meta and the queue (flow.key: meta .. ':f' .. kind .. ':' ..
-- #queue .. ':' .. queue .. rest, so no two queues' keys meet; keys.rs
-- `flow_key` composes the same, pinned by a library test):
--   l..lane  zset  job number (13 digits) -> -priority: the lane's ready jobs, best
--                  priority first, then enqueue order
--   r        zset  lane -> its head's priority and number (FIFO rotation)
--   p        zset  lane -> pass (round-robin and weighted rotation: the lane with
--                  the lowest pass goes next; each job it starts adds 1/weight)
--   w..ckey  set   lanes parked on that concurrency key
--   W        set   concurrency keys with lanes parked on them (PurgeJobs finds them)
--   t        zset  lane -> when it may run again (rate, throttle)
--   c        zset  concurrency key -> jobs of the key leased now (its slots)
--   b        zset  key -> ready jobs carrying it (any role): ListFlowKeys' backlog
--   h        zset  key -> throttled until, epoch ms (ThrottleKey)
--   k        hash  key -> "max_running,limit,period_ms,burst" (SetKeyLimit; '' parts
--                  fall back to the policy)
--   g        hash  fairness key -> weight (FAIRNESS_WEIGHTED)
--   a..rkey  string rate key's GCRA theoretical arrival time, µs (expires with it)
--   q        string the queue's own GCRA time, µs
-- The queue's policy is field `flow` of its state hash (queue_state):
-- "max_running,limit,period_ms,burst,key_max_running,key_limit,key_period_ms,
-- key_burst,fairness,default_weight" ('' or 0 for unset, fairness f | r | w), read
-- with `paused` in one HMGET; field `vt` is the rotation's virtual time (the pass of
-- the lane served last; a lane entering round-robin starts there); field `fl` is set
-- once the queue has had a lane, so a queue that never had one pays nothing here;
-- `fk` while the queue has key overrides (k), `fh` while it has throttles (h), and
-- `fm` while lanes of the other rotation wait to move over (a fairness change), so a
-- claim reads those only when they are there.
--
-- Slots: a concurrency slot is taken when a job of the key is leased and given back
-- by the script that ends that lease (ack, fail, release, expiry in the claim), the
-- one place each lease ends (flow.finish), so a slot is held exactly while a lease
-- is: never by a job that is not leased, never lost with a crashed worker (its lease
-- expires). Rates are GCRA (generic cell rate algorithm): a key's time `tat` moves
-- on by cost * period / limit per start, and a start is allowed while it does not
-- take tat past now + (burst + 1) * period / limit, so over any window of length
-- period, starts <= limit + burst (a job whose cost alone is over burst + 1 starts
-- only once the key is idle, and counts in full).

flow.cache = {}
-- Per-call state (lib/job.lua job_begin says why): the policy cache, the clock
-- read, and whether a finish woke a key.
local function flow_begin()
  flow.cache, flow.clock, flow.woke = {}, nil, nil
end
flow.NONE = { mr = 0, rl = 0, rp = 0, rb = 0, kmr = 0, krl = 0, krp = 0, krb = 0,
  fair = 'f', dw = 1, none = true }
flow.PARK_MAX = 64 -- lanes put back per call: from the time park, per freed key
flow.PRIORITY_CLAMP = 2047 -- FIFO rotation: priorities beyond +-this rank equal
flow.N_SPAN = 2199023255552 -- 2^41: job numbers below it order exactly

function flow.key(meta, kind, q, rest)
  return meta .. ':f' .. kind .. ':' .. #q .. ':' .. q .. (rest or '')
end

function flow.lane(f, c, r) return #f .. ':' .. f .. #c .. ':' .. c .. r end

function flow.lane_keys(L)
  local i = string.find(L, ':', 1, true)
  local nf = tonumber(string.sub(L, 1, i - 1))
  local f = string.sub(L, i + 1, i + nf)
  local j = i + nf + 1
  local k = string.find(L, ':', j, true)
  local nc = tonumber(string.sub(L, j, k - 1))
  return f, string.sub(L, k + 1, k + nc), string.sub(L, k + nc + 1)
end

-- "a,b,c" -> numbers (nil for '').
local function flow_numbers(text)
  local v = {}
  for part in string.gmatch(text .. ',', '([^,]*),') do v[#v + 1] = part end
  return v
end

function flow.parse(text)
  if not text or text == '' then return flow.NONE end
  local v = flow_numbers(text)
  local fair = v[9]
  if fair ~= 'r' and fair ~= 'w' then fair = 'f' end
  local pol = { mr = tonumber(v[1]) or 0, rl = tonumber(v[2]) or 0, rp = tonumber(v[3]) or 0,
    rb = tonumber(v[4]) or 0, kmr = tonumber(v[5]) or 0, krl = tonumber(v[6]) or 0,
    krp = tonumber(v[7]) or 0, krb = tonumber(v[8]) or 0, fair = fair,
    dw = tonumber(v[10]) or 1 }
  if pol.rl > 0 then pol.rate = { limit = pol.rl, period = pol.rp, burst = pol.rb } end
  if pol.krl > 0 then pol.key_rate = { limit = pol.krl, period = pol.krp, burst = pol.krb } end
  return pol
end

-- The queue's policy (flow.NONE when it has none), read once per script call.
function flow.policy(meta, q)
  local pol = flow.cache[q]
  if pol == nil then
    pol = flow.parse(redis.call('HGET', queue_state(meta, q), 'flow'))
    flow.cache[q] = pol
  end
  return pol
end

-- Whether the queue is paused, its policy, whether it ever had a lane, and its marks
-- ({ k, h, m }: fields fk, fh, fm): one HMGET.
function flow.gate(meta, q)
  local got = redis.call('HMGET', queue_state(meta, q), 'paused', 'flow', 'fl', 'fk', 'fh', 'fm')
  local pol = flow.parse(got[2])
  flow.cache[q] = pol
  return got[1] == '1', pol, got[3] == '1', { k = got[4] == '1', h = got[5] == '1', m = got[6] == '1' }
end

-- The FIFO rotation's score of a lane whose head is job number n at `priority`.
function flow.fifo(priority, n)
  local rank = math.max(-flow.PRIORITY_CLAMP, math.min(flow.PRIORITY_CLAMP, -priority))
  return string.format('%d', rank * flow.N_SPAN + math.min(n, flow.N_SPAN - 1))
end

function flow.member(n) return string.format('%013d', n) end

-- The ready-jobs count of each key a lane carries (ListFlowKeys' backlog).
function flow.backlog(meta, q, f, c, r, delta)
  local bkey = flow.key(meta, 'b', q)
  local seen = {}
  for _, key in ipairs({ f, c, r }) do
    if key ~= '' and not seen[key] then
      seen[key] = true
      if tonumber(redis.call('ZINCRBY', bkey, delta, key)) <= 0 then
        redis.call('ZREM', bkey, key)
      end
    end
  end
end

-- A lane with entries takes its place in the rotation of the queue's fairness.
function flow.enter(meta, q, pol, L)
  local lkey = flow.key(meta, 'l', q, L)
  if pol.fair == 'f' then
    local head = redis.call('ZRANGE', lkey, 0, 0, 'WITHSCORES')
    if #head == 0 then return end
    redis.call('ZADD', flow.key(meta, 'r', q), flow.fifo(-tonumber(head[2]), tonumber(head[1])), L)
  else
    if redis.call('EXISTS', lkey) == 0 then return end
    local vt = redis.call('HGET', queue_state(meta, q), 'vt') or '0'
    redis.call('ZADD', flow.key(meta, 'p', q), 'NX', vt, L)
  end
end

-- Job r (queue, priority, n, fkey, ckey, rkey) became ready: into its lane, or the
-- plain ready list (lib/job.lua ready_push) when it has no key and its queue takes
-- turns by FIFO. at_head: a job coming back (plain lists only; a lane orders by number).
function flow.ready(K, meta, r, at_head)
  local f, c, rk = r.fkey or '', r.ckey or '', r.rkey or ''
  local q = r.queue
  local pol
  if f == '' and c == '' and rk == '' then
    pol = flow.policy(meta, q)
    if pol.fair == 'f' then
      ready_push(K, q, r.priority, r.n, at_head)
      return
    end
  else
    pol = flow.policy(meta, q)
  end
  local L = flow.lane(f, c, rk)
  local lkey = flow.key(meta, 'l', q, L)
  if redis.call('ZADD', lkey, -r.priority, flow.member(r.n)) == 0 then return end
  flow.backlog(meta, q, f, c, rk, 1)
  if redis.call('ZCARD', lkey) == 1 then
    flow.enter(meta, q, pol, L)
    redis.call('HSET', queue_state(meta, q), 'fl', '1')
  elseif pol.fair == 'f' then
    redis.call('ZADD', flow.key(meta, 'r', q), 'XX', 'LT', flow.fifo(r.priority, r.n), L)
  end
end

-- The lanes parked on concurrency key c go back to the rotation (at most PARK_MAX;
-- a key that keeps more stays listed in W). -> how many came back.
function flow.unpark(meta, q, c)
  local wkey = flow.key(meta, 'w', q, c)
  local lanes = redis.call('SPOP', wkey, flow.PARK_MAX)
  if #lanes == 0 then return 0 end
  local pol = flow.policy(meta, q)
  for _, L in ipairs(lanes) do flow.enter(meta, q, pol, L) end
  if redis.call('EXISTS', wkey) == 0 then redis.call('SREM', flow.key(meta, 'W', q), c) end
  return #lanes
end

-- A lease of a job of queue q with concurrency key c (maybe '') ended: its slot is
-- free, and the lanes parked on the key go back to the rotation. Returns 1 when work
-- may have become claimable for waiters (a lane came back, or the queue has a
-- max_running that a claim may have met), for the caller to wake them.
function flow.finish(meta, q, c)
  local woke = 0
  if c ~= nil and c ~= '' then
    local ckey = flow.key(meta, 'c', q)
    if tonumber(redis.call('ZINCRBY', ckey, -1, c)) <= 0 then redis.call('ZREM', ckey, c) end
    if flow.unpark(meta, q, c) > 0 then woke = 1 end
  end
  if flow.policy(meta, q).mr > 0 then woke = 1 end
  return woke
end

-- GCRA (see the header). rate = { limit, period_ms, burst }; t_key holds tat in µs.
-- flow.gcra_wait(now_us, tat, rate, cost) -> nil when a start of `cost` is allowed
-- now, else the epoch ms it will be.
-- Redis TIME in µs, read once per script call: rates of more than one start per
-- millisecond need the finer clock (the claim's `now` is in ms).
function flow.now_us()
  if not flow.clock then
    local t = redis.call('TIME')
    flow.clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return flow.clock
end

function flow.interval(rate) return math.ceil(rate.period * 1000 / rate.limit) end

function flow.gcra_wait(now_us, tat, rate, cost)
  if cost <= 0 or tat <= now_us then return nil end
  local t = flow.interval(rate)
  local after = tat + cost * t
  if after - now_us <= (rate.burst + 1) * t then return nil end
  local at_us = math.min(after - (rate.burst + 1) * t, tat)
  return math.ceil(at_us / 1000)
end

-- Stores a key's GCRA time `tat` (µs), expiring once it is past (an idle key's time
-- is no time at all).
function flow.tat_put(t_key, now_us, tat)
  if tat <= now_us then return end
  redis.call('SET', t_key, string.format('%d', tat), 'PX',
    string.format('%d', math.ceil((tat - now_us) / 1000) + 1))
end

function flow.tat(t_key)
  return tonumber(redis.call('GET', t_key) or '0') or 0
end

-- One key's limits: its SetKeyLimit override, else the policy's per-key ones.
-- -> max_running (0: none), rate ({limit, period, burst} or nil)
function flow.limits(F, key)
  local pol = F.pol
  if not F.overrides then return pol.kmr, pol.key_rate end
  local o = F.override_cache[key]
  if o == nil then
    o = { mr = pol.kmr, rate = pol.key_rate }
    local text = redis.call('HGET', flow.key(F.meta, 'k', F.q), key)
    if text then
      local v = flow_numbers(text)
      if v[1] ~= '' then o.mr = tonumber(v[1]) end
      if v[2] ~= '' then
        o.rate = { limit = tonumber(v[2]), period = tonumber(v[3]), burst = tonumber(v[4]) or 0 }
      end
    end
    F.override_cache[key] = o
  end
  return o.mr, o.rate
end

-- Opens the flow side of queue q for one claim call: lanes whose time came go back
-- to the rotation, lanes of the other rotation (the fairness changed) move over, a
-- bounded number each; throttles that ended are dropped; a key with parked lanes and
-- a free slot gets them back. -> F, the claim's state
-- for the queue.
function flow.open(K, meta, q, pol, now, marks)
  local F = { K = K, meta = meta, q = q, pol = pol, now = now, now_us = flow.now_us(),
    rot = flow.key(meta, (pol.fair == 'f') and 'r' or 'p', q), reasons = {},
    override_cache = {}, overrides = marks.k, throttles = false, tats = {}, moved = {},
    kc = flow.key(meta, 'c', q), kh = flow.key(meta, 'h', q), kt = flow.key(meta, 't', q),
    kl = flow.key(meta, 'l', q), ka = flow.key(meta, 'a', q) }
  local tkey = flow.key(meta, 't', q)
  local due = redis.call('ZRANGEBYSCORE', tkey, '-inf', now, 'LIMIT', 0, flow.PARK_MAX)
  if #due > 0 then
    redis.call('ZREM', tkey, unpack(due))
    for _, L in ipairs(due) do flow.enter(meta, q, pol, L) end
  end
  if marks.m then
    local other = flow.key(meta, (pol.fair == 'f') and 'p' or 'r', q)
    local moved = redis.call('ZRANGE', other, 0, flow.PARK_MAX - 1)
    if #moved > 0 then
      redis.call('ZREM', other, unpack(moved))
      for _, L in ipairs(moved) do flow.enter(meta, q, pol, L) end
    end
    if redis.call('EXISTS', other) == 0 then redis.call('HDEL', queue_state(meta, q), 'fm') end
  end
  if marks.h then
    local hkey = flow.key(meta, 'h', q)
    redis.call('ZREMRANGEBYSCORE', hkey, '-inf', now)
    F.throttles = redis.call('EXISTS', hkey) == 1
    if not F.throttles then redis.call('HDEL', queue_state(meta, q), 'fh') end
  end
  -- One concurrency key with parked lanes, at random: when it has room (its lanes
  -- outnumbered PARK_MAX and those put back ran dry, or its limit was raised), its
  -- lanes come back. So no lane stays parked on a key with a free slot.
  local c = redis.call('SRANDMEMBER', flow.key(meta, 'W', q))
  if c then
    local mr = flow.limits(F, c)
    if mr == 0 or tonumber(redis.call('ZSCORE', flow.key(meta, 'c', q), c) or '0') < mr then
      flow.unpark(meta, q, c)
    end
  end
  return F
end

-- Why the lane's next job (cost) may not start now: nil, or the reason and, for a
-- time, when it may ('throttled' | 'rate', epoch ms) or ('concurrency'). A rate
-- key's time is read once per call (F.tats; flow.flush writes what moved). The
-- concurrency check comes last and takes the slot as it checks (one ZINCRBY where a
-- read and a write would be two): a candidate that is not leased after all gives it
-- back in flow.flush, in the same script.
function flow.blocked(F, f, c, r, cost)
  if F.throttles then
    local until_ms = nil
    for _, key in ipairs({ f, c, r }) do
      if key ~= '' then
        local s = tonumber(redis.call('ZSCORE', F.kh, key) or '')
        if s and s > F.now and (until_ms == nil or s > until_ms) then until_ms = s end
      end
    end
    if until_ms then return 'throttled', until_ms end
  end
  if r ~= '' then
    local _, rate = flow.limits(F, r)
    if rate then
      local tat = F.tats[r]
      if tat == nil then
        tat = flow.tat(F.ka .. r)
        F.tats[r] = tat
      end
      local at = flow.gcra_wait(F.now_us, tat, rate, cost)
      if at then return 'rate', at end
    end
  end
  if c ~= '' then
    local mr = flow.limits(F, c)
    if mr > 0 then
      if tonumber(redis.call('ZINCRBY', F.kc, 1, c)) > mr then
        flow.slot_back(F, c)
        return 'concurrency'
      end
      return nil, nil, true
    end
  end
  return nil
end

-- Gives back a slot of concurrency key c taken in this call.
function flow.slot_back(F, c)
  if tonumber(redis.call('ZINCRBY', F.kc, -1, c)) <= 0 then redis.call('ZREM', F.kc, c) end
end

-- The lane at the head of the rotation with its next job loaded, or nil. Lanes over
-- a limit are parked on the way (counted in F.reasons), stale entries dropped; each
-- costs one of the claim's skips (skip() returns false once they are spent).
function flow.front(F, skip)
  if F.cand then return F.cand end
  local meta, q = F.meta, F.q
  while true do
    local top = redis.call('ZRANGE', F.rot, 0, 0, 'WITHSCORES')
    if #top == 0 then return nil end
    local L = top[1]
    local lkey = F.kl .. L
    local head = redis.call('ZRANGE', lkey, 0, 0)
    if #head == 0 then
      redis.call('ZREM', F.rot, L)
    else
      local f, c, r = flow.lane_keys(L)
      local n = tonumber(head[1])
      local id = listing_id(F.K, q, n)
      local p = id and packed_load(F.K.job .. id)
      if p and not is_error(p) and p[P_STATE] == STATE_CODE.pending and p[P_QUEUE] == q
          and p[P_N] == n then
        local cost = tonumber(p[P_COST] or '') or 1
        local reason, until_ms, reserved = flow.blocked(F, f, c, r, cost)
        if reason == nil then
          F.cand = { queue = q, lane = L, lkey = lkey, member = head[1], id = id, p = p,
            score = -p[P_PRIORITY], f = f, c = c, r = r, cost = cost,
            pass = tonumber(top[2]), flow = F, reserved = reserved }
          return F.cand
        end
        redis.call('ZREM', F.rot, L)
        if reason == 'concurrency' then
          redis.call('SADD', flow.key(meta, 'w', q, c), L)
          redis.call('SADD', flow.key(meta, 'W', q), c)
        else
          redis.call('ZADD', F.kt, string.format('%d', until_ms), L)
        end
        F.reasons[reason] = (F.reasons[reason] or 0) + 1
      else
        redis.call('ZREM', lkey, head[1])
        flow.backlog(meta, q, f, c, r, -1)
        flow.rescore(F, L, lkey, tonumber(top[2]))
      end
      if not skip() then return nil end
    end
  end
end

-- The lane's place in the rotation after its head changed: gone when it is empty,
-- else rescored (FIFO: its new head; turns: `pass`).
function flow.rescore(F, L, lkey, pass)
  local head = redis.call('ZRANGE', lkey, 0, 0, 'WITHSCORES')
  if #head == 0 then
    redis.call('ZREM', F.rot, L)
  elseif F.pol.fair == 'f' then
    redis.call('ZADD', F.rot, flow.fifo(-tonumber(head[2]), tonumber(head[1])), L)
  else
    redis.call('ZADD', F.rot, string.format('%.17g', pass), L)
  end
end

-- The candidate F.cand was leased: out of its lane, its slot and rate taken, the lane
-- on to its next turn.
function flow.take(F)
  local cand = F.cand
  F.cand = nil
  local meta, q = F.meta, F.q
  redis.call('ZREM', cand.lkey, cand.member)
  flow.backlog(meta, q, cand.f, cand.c, cand.r, -1)
  if cand.c ~= '' and not cand.reserved then redis.call('ZINCRBY', F.kc, 1, cand.c) end
  if cand.r ~= '' and cand.cost > 0 then
    local _, rate = flow.limits(F, cand.r)
    if rate then
      F.tats[cand.r] = math.max(F.tats[cand.r], F.now_us) + cand.cost * flow.interval(rate)
      F.moved[cand.r] = true
    end
  end
  local pass = cand.pass
  if F.pol.fair ~= 'f' then
    local weight = 1
    if F.pol.fair == 'w' then
      weight = tonumber(redis.call('HGET', flow.key(meta, 'g', q), cand.f) or '') or F.pol.dw
    end
    F.vt = pass
    pass = pass + 1 / weight
  end
  flow.rescore(F, cand.lane, cand.lkey, pass)
end

-- The end of the claim call for the queue: a slot its unleased candidate took goes
-- back, the rate times that moved and the rotation's virtual time are written.
function flow.flush(F)
  if F.cand and F.cand.reserved then flow.slot_back(F, F.cand.c) end
  for r in pairs(F.moved) do flow.tat_put(F.ka .. r, F.now_us, F.tats[r]) end
  if F.vt then
    redis.call('HSET', queue_state(F.meta, F.q), 'vt', string.format('%.17g', F.vt))
  end
end

-- The queue's own limits (max_running over all its jobs, rate over all starts), for
-- a claim about to lease a job of `cost` with `running` of the queue's jobs leased.
-- -> nil when it may, else the reason and, for the rate, when it may (epoch ms).
-- The queue's time is read once per call (pol.tat) and written once at its end
-- (flow.queue_flush).
function flow.queue_blocked(meta, q, pol, now, running, cost)
  if pol.mr > 0 and running >= pol.mr then return 'queue_running' end
  if pol.rate then
    if pol.tat == nil then pol.tat = flow.tat(flow.key(meta, 'q', q)) end
    local at = flow.gcra_wait(flow.now_us(), pol.tat, pol.rate, cost)
    if at then return 'queue_rate', at end
  end
  return nil
end

function flow.queue_take(pol, now, cost)
  if not pol.rate or cost <= 0 then return end
  pol.tat = math.max(pol.tat, flow.now_us()) + cost * flow.interval(pol.rate)
  pol.tat_moved = true
end

function flow.queue_flush(meta, q, pol, now)
  if pol.tat_moved then flow.tat_put(flow.key(meta, 'q', q), flow.now_us(), pol.tat) end
end

-- When the next parked lane of the queue may run (epoch ms), or nil.
function flow.next_time(meta, q)
  local top = redis.call('ZRANGE', flow.key(meta, 't', q), 0, 0, 'WITHSCORES')
  if #top == 0 then return nil end
  return tonumber(top[2])
end

-- PurgeJobs of pending jobs (purge_jobs.lua): every place a lane of queue q can be —
-- the two rotations, the time park, and the sets of lanes parked on a concurrency
-- key — as { kind, key, the lanes of one step }. purge(L) deletes up to what the
-- batch has left of lane L's entries and says whether the lane is empty now; an
-- emptied lane leaves its place. -> whether lanes may remain.
function flow.purge_lanes(meta, q, purge)
  for _, kind in ipairs({ 'r', 'p', 't' }) do
    local place = flow.key(meta, kind, q)
    while true do
      local top = redis.call('ZRANGE', place, 0, 0)
      if #top == 0 then break end
      if not purge(top[1]) then return true end
      redis.call('ZREM', place, top[1])
    end
  end
  local parked = flow.key(meta, 'W', q)
  while true do
    local c = redis.call('SRANDMEMBER', parked)
    if not c then return false end
    local wkey = flow.key(meta, 'w', q, c)
    for _, L in ipairs(redis.call('SMEMBERS', wkey)) do
      if not purge(L) then return true end
      redis.call('SREM', wkey, L)
    end
    redis.call('SREM', parked, c)
  end
end

-- A policy changed (set_queue_policy.lua): lanes parked under the old limits come
-- back to the rotation, to be checked again at the next claim — those parked on up to
-- PARK_KEYS concurrency keys and up to PARK_KEYS * PARK_MAX parked until a time (a
-- queue with more meets the rest as slots free, windows open, or a claim's sampling
-- in flow.open finds them).
flow.PARK_KEYS = 16

function flow.release_parked(meta, q)
  for _, c in ipairs(redis.call('SRANDMEMBER', flow.key(meta, 'W', q), flow.PARK_KEYS)) do
    flow.unpark(meta, q, c)
  end
  local tkey = flow.key(meta, 't', q)
  local lanes = redis.call('ZRANGE', tkey, 0, flow.PARK_KEYS * flow.PARK_MAX - 1)
  if #lanes > 0 then
    redis.call('ZREM', tkey, unpack(lanes))
    local pol = flow.policy(meta, q)
    for _, L in ipairs(lanes) do flow.enter(meta, q, pol, L) end
  end
end
