#!lua flags=allow-oom,no-writes
-- queue_stats: a page of a namespace's queues with their state counts (issue 14).
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta   <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] after: list queues after this name ("" = from the first)
-- ARGV[10] limit: most queues in the page
-- Returns { now ms, more (1 if queues after this page), n, then per queue:
--           name, pending, delayed, active, dead, paused (0/1),
--           oldest pending run_at ms ("" none found), counted (0/1), removed (finished
--           jobs removed by retention so far, lib/job.lua job_remove), waiting (flow
--           nodes waiting for their dependencies, issue 34), enqueued, completed
--           and failed (totals since the queue began, issue 33: jobs numbered, jobs
--           completed, attempts failed or whose lease expired), policy (the
--           state's `flow` field, lib/flow.lua; "" none), w (the number of weight
--           items that follow: the weights hash as key, weight pairs, read only for
--           a weighted policy) }
--   counted: 0 while the namespace's jobs predate the counts and Migrate has not
--   recounted this queue yet (pending, waiting and dead are then not to be trusted).
--
-- Read-only. Per queue O(1) counts (HMGET of its state, ZCARD of its delayed, leased
-- and dead sets) and the oldest pending job from the heads of its ready lists: of
-- its best 2 priorities, the first 2 entries each (a job coming back from a lease or
-- a retry goes to the head with a fresh run_at, so the oldest is among the first few),
-- skipping stale entries; a weighted queue's weights (at most 1,000, SetQueuePolicy
-- bounds them). The queue registry is read by name (ZRANGE BYLEX). The page
-- is bounded by the caller (at most 25 queues per call). Invariant 5: refused while the namespace's
-- jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local meta = KEYS[2]
local after, limit = ARGV[9], tonumber(ARGV[10])
local from = '-'
if after ~= '' then from = '(' .. after end
local names = redis.call('ZRANGE', queue_registry(meta), from, '+', 'BYLEX', 'LIMIT', 0,
  limit + 1)
local more = 0
if #names > limit then
  more = 1
  names[#names] = nil
end

local function oldest_pending(q)
  local oldest = nil
  for _, priority in ipairs(redis.call('ZRANGE', K.prio .. q, 0, 1)) do
    local list = ready_list(K, q, priority)
    for _, entry in ipairs(redis.call('LRANGE', list, 0, 1)) do
      local n = tonumber(entry)
      local id = listing_id(K, q, n)
      if id then
        local r = job_load(K.job .. id)
        if r and not is_error(r) and r.state == 'pending' and r.queue == q and r.n == n then
          if oldest == nil or r.run_at < oldest then oldest = r.run_at end
        end
      end
    end
  end
  return oldest
end

local out = { now, more, #names }
for _, q in ipairs(names) do
  local state = redis.call('HMGET', queue_state(meta, q), 'pending', 'paused', 'removed',
    'flow', 'waiting', 'completed', 'failed')
  local counted = COUNTS_KEPT
  if not counted then counted = redis.call('HGET', meta, 'rc:' .. q) == '-1' end
  out[#out + 1] = q
  out[#out + 1] = tonumber(state[1]) or 0
  out[#out + 1] = redis.call('ZCARD', K.delayed .. q)
  out[#out + 1] = redis.call('ZCARD', K.leased .. q)
  out[#out + 1] = redis.call('ZCARD', queue_dead(meta, q))
  out[#out + 1] = (state[2] == '1') and 1 or 0
  out[#out + 1] = oldest_pending(q) or ''
  out[#out + 1] = counted and 1 or 0
  out[#out + 1] = tonumber(state[3]) or 0
  out[#out + 1] = math.max(tonumber(state[5]) or 0, 0)
  out[#out + 1] = tonumber(redis.call('HGET', meta, 'n:' .. q)) or 0
  out[#out + 1] = tonumber(state[6]) or 0
  out[#out + 1] = tonumber(state[7]) or 0
  local policy = state[4] or ''
  out[#out + 1] = policy
  local weights = {}
  if flow.parse(policy).fair == 'w' then
    weights = redis.call('HGETALL', flow.key(meta, 'g', q))
  end
  out[#out + 1] = #weights
  for _, item in ipairs(weights) do out[#out + 1] = item end
end
return out
