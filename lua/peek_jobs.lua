#!lua flags=allow-oom,no-writes
-- peek_jobs: what the per-namespace job wake-up timer needs, in one call.
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta   <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9..] queues: queue names
-- Returns { now ms, earliest future delayed run or lease deadline ("" none),
--           then per queue: about how many jobs are claimable now (ready-list
--           lengths of its best 16 priorities + due delayed + expired leases) }
--
-- Flow control (issue 32, lib/flow.lua): a queue with lanes adds its rotation's size
-- (each lane there has a job to run) and its parked lanes whose time has come, and
-- the next parked time to `earliest`; a queue at its max_running counts only the room
-- left, and one whose rate is spent counts 0 and adds when it opens. So a waiter
-- is woken when a slot frees or a window opens, never for work no claim could take.
--
-- Read-only. O(Q log N): per queue ZRANGE of at most 16 priorities, an LLEN each,
-- and per delayed and leased set its head (ZRANGE 0 0), then ZCOUNT and ZRANGEBYSCORE
-- LIMIT 1 only when the head is due (an idle queue costs three commands). The count wakes that many waiters; it may include
-- stale ready entries (their claims drop them) and ignores priorities past the
-- 16th (the claims that follow report `more`). A paused queue counts 0 and adds no
-- earliest time: no timer wakes a long-poll for it. Invariant 7 (docs/DESIGN.md): now is Redis TIME, so
-- every replica's timer agrees on what is claimable. Invariant 5: refused while the
-- namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local earliest = nil
local counts = {}
-- The earliest of a time and what is known.
local function later_at(s)
  if s ~= nil and (earliest == nil or s < earliest) then earliest = s end
end

-- Lanes of queue q that may run now (lib/flow.lua): those in its rotation, and those
-- parked until a time that has come; records when the next parked one may.
local function lanes_claimable(q, pol)
  local n = redis.call('ZCARD', flow.key(KEYS[2], (pol.fair == 'f') and 'r' or 'p', q))
  local tkey = flow.key(KEYS[2], 't', q)
  local top = redis.call('ZRANGE', tkey, 0, 0, 'WITHSCORES')
  if #top > 0 and tonumber(top[2]) <= now then
    n = n + redis.call('ZCOUNT', tkey, '-inf', now)
    top = redis.call('ZRANGEBYSCORE', tkey, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  end
  if #top > 0 then later_at(tonumber(top[2])) end
  return n
end

-- About how many jobs of queue q are claimable now; records the earliest future time.
local function claimable(q)
  -- A paused queue has nothing claimable and nothing to wake for (one HMGET, which
  -- also reads the flow policy).
  local paused, pol, laned = flow.gate(KEYS[2], q)
  if paused then return 0 end
  local n = 0
  for _, priority in ipairs(redis.call('ZRANGE', K.prio .. q, 0, 15)) do
    n = n + redis.call('LLEN', ready_list(K, q, priority))
  end
  if laned or pol.fair ~= 'f' then n = n + lanes_claimable(q, pol) end
  local expired = 0
  for _, k in ipairs({ K.delayed .. q, K.leased .. q }) do
    -- The head alone answers the idle case (empty, or nothing due yet) in one call.
    local later = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
    if #later > 0 and tonumber(later[2]) <= now then
      local due = redis.call('ZCOUNT', k, '-inf', now)
      n = n + due
      if k == K.leased .. q then expired = due end
      later = redis.call('ZRANGEBYSCORE', k, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    end
    if #later > 0 then later_at(tonumber(later[2])) end
  end
  -- The queue's own limits (issue 32): no more than the room max_running leaves
  -- (an expired lease makes room), nothing while its rate is spent (and its window's
  -- opening is a time to wake at).
  if pol.mr > 0 then
    n = math.min(n, math.max(0, pol.mr - redis.call('ZCARD', K.leased .. q) + expired))
  end
  if pol.rl > 0 and n > 0 then
    local at = flow.gcra_wait(flow.now_us(), flow.tat(flow.key(KEYS[2], 'q', q)),
      { limit = pol.rl, period = pol.rp, burst = pol.rb }, 1)
    if at then
      n = 0
      later_at(at)
    end
  end
  return n
end

for i = 9, #ARGV do
  counts[#counts + 1] = claimable(ARGV[i])
end
local out = { now, earliest or '' }
for i = 1, #counts do out[#out + 1] = counts[i] end
return out
