#!lua flags=allow-oom
-- peek_jobs: what the per-namespace job wake-up timer needs, in one call.
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta   <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9..] queues: queue names
-- Returns { now ms, earliest future delayed run or lease deadline ("" none),
--           then per queue: about how many jobs are claimable now (ready-list
--           lengths of its best 16 priorities + due delayed + expired leases + flow
--           lanes in the rotation, lib/flow.lua, + 1 when a parked lane's time came) }
--   The earliest time includes the flow time park's head (a rate window opening, a
--   throttle ending).
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
-- About how many jobs of queue q are claimable now; records the earliest future time.
local function claimable(q)
  -- A paused queue has nothing claimable and nothing to wake for (one HMGET, which
  -- also says whether the queue ever had a flow lane).
  local paused, _, lanes = flow.gate(KEYS[2], q)
  if paused then return 0 end
  local n = 0
  if lanes then
    -- Flow control (lib/flow.lua): lanes in either rotation may be claimable; the
    -- time park's head is when a rate window opens or a throttle ends.
    n = redis.call('ZCARD', flow.key(KEYS[2], 'r', q)) + redis.call('ZCARD', flow.key(KEYS[2], 'p', q))
    local at = flow.next_time(KEYS[2], q)
    if at and at <= now then
      n = n + 1
    elseif at and (earliest == nil or at < earliest) then
      earliest = at
    end
  end
  for _, priority in ipairs(redis.call('ZRANGE', K.prio .. q, 0, 15)) do
    n = n + redis.call('LLEN', ready_list(K, q, priority))
  end
  for _, k in ipairs({ K.delayed .. q, K.leased .. q }) do
    -- The head alone answers the idle case (empty, or nothing due yet) in one call.
    local later = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
    if #later > 0 and tonumber(later[2]) <= now then
      n = n + redis.call('ZCOUNT', k, '-inf', now)
      later = redis.call('ZRANGEBYSCORE', k, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    end
    if #later > 0 then
      local s = tonumber(later[2])
      if earliest == nil or s < earliest then earliest = s end
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
