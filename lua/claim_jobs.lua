-- claim_jobs: lease up to max_jobs claimable jobs from a set of queues.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- ARGV[1..6] key prefixes: job, ready, delayed, leased, listing, dedup
-- ARGV[7]  lease token base (random, minted by the caller; token = base .. "." .. i)
-- ARGV[8]  lease ms for these claims ("" = each job's own default lease)
-- ARGV[9]  max jobs to claim
-- ARGV[10] worker id
-- ARGV[11] budget: most expired leases re-handed and most delayed jobs promoted, per
--          queue, in this call
-- ARGV[12..] queue names
-- Returns { now, next_ms, more, n, then per claimed job: field count, HGETALL... }
--   next_ms: earliest future delayed run or lease deadline in these queues ("" none),
--            for the wake-up timer
--   more: 1 if claimable jobs are left in these queues after this claim
--
-- Invariants kept:
-- * 1 (derived indexes): each index entry met is re-validated against the job hash
--   (state, rmember, lease deadline) and dangling or stale entries are dropped.
-- * 3 (no O(N)): expired leases are found by ZRANGEBYSCORE on the per-queue lease set
--   (scored by deadline) and delayed jobs by ZRANGEBYSCORE on the delayed set, each
--   bounded by ARGV[11]; a claim is a ZRANGE 0 0 per queue plus one ZREM.
-- * 4 (a crash never loses work): a claimed job is in the lease set until acked,
--   failed or re-handed; an expired lease makes it pending again here (attempt + 1 at
--   its next claim) or dead if it has used max_attempts.
-- * 7 (one clock): Redis TIME decides what is due and what is expired.

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local P_JOB, P_READY, P_DELAYED, P_LEASED = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local done = KEYS[1]
local token_base, lease_override = ARGV[7], tonumber(ARGV[8])
local max_jobs, worker, budget = tonumber(ARGV[9]), ARGV[10], tonumber(ARGV[11])
local queues = {}
for i = 12, #ARGV do queues[#queues + 1] = ARGV[i] end
local MAX_ERRORS = 50

local function push_error(key, attempt, message)
  local ok, errors = pcall(cjson.decode, redis.call('HGET', key, 'errors') or '[]')
  if not ok or type(errors) ~= 'table' then errors = {} end
  errors[#errors + 1] = { attempt = attempt, message = message, at = now }
  while #errors > MAX_ERRORS do table.remove(errors, 1) end
  redis.call('HSET', key, 'errors', cjson.encode(errors))
end

-- 1. Expired leases: pending again, or dead when out of attempts.
local function reclaim(queue)
  local lkey = P_LEASED .. queue
  local ids = redis.call('ZRANGEBYSCORE', lkey, '-inf', now, 'LIMIT', 0, budget)
  for _, id in ipairs(ids) do
    redis.call('ZREM', lkey, id)
    local key = P_JOB .. id
    local h = redis.call('HMGET', key, 'state', 'lease_until', 'attempts', 'max_attempts', 'priority', 'rmember', 'queue')
    local until_ms = tonumber(h[2])
    if h[1] == 'active' and h[7] == queue and until_ms and until_ms <= now then
      local attempts = tonumber(h[3])
      push_error(key, attempts, 'lease expired')
      if attempts >= tonumber(h[4]) then
        redis.call('HSET', key, 'state', 'dead', 'token', '', 'lease_until', '',
          'finished_ms', now, 'updated_ms', now)
        redis.call('ZADD', done, now, id)
      else
        redis.call('HSET', key, 'state', 'pending', 'token', '', 'lease_until', '',
          'run_at_ms', now, 'updated_ms', now)
        redis.call('ZADD', P_READY .. queue, -tonumber(h[5]), h[6])
      end
    elseif h[1] == 'active' and h[7] == queue and until_ms then
      redis.call('ZADD', lkey, until_ms, id) -- stale score: the hash says later
    end
  end
end

-- 2. Delayed jobs whose time has come: pending.
local function promote(queue)
  local dkey = P_DELAYED .. queue
  local ids = redis.call('ZRANGEBYSCORE', dkey, '-inf', now, 'LIMIT', 0, budget)
  for _, id in ipairs(ids) do
    redis.call('ZREM', dkey, id)
    local key = P_JOB .. id
    local h = redis.call('HMGET', key, 'state', 'run_at_ms', 'priority', 'rmember', 'queue')
    if h[1] == 'delayed' and h[5] == queue then
      local run_at = tonumber(h[2])
      if run_at and run_at > now then
        redis.call('ZADD', dkey, run_at, id) -- stale score: the hash says later
      else
        redis.call('HSET', key, 'state', 'pending')
        redis.call('ZADD', P_READY .. queue, -tonumber(h[3]), h[4])
      end
    end
  end
end

for _, q in ipairs(queues) do
  reclaim(q)
  promote(q)
end

-- 3. Pop the best head across the queues: lowest score (highest priority), then
-- lowest member (earliest sequence).
local function best_head()
  local best_q, best_m, best_s = nil, nil, nil
  for _, q in ipairs(queues) do
    local head = redis.call('ZRANGE', P_READY .. q, 0, 0, 'WITHSCORES')
    if #head > 0 then
      local s = tonumber(head[2])
      if best_q == nil or s < best_s or (s == best_s and head[1] < best_m) then
        best_q, best_m, best_s = q, head[1], s
      end
    end
  end
  return best_q, best_m
end

local claimed = {}
local skips = 0
while #claimed < max_jobs and skips < budget do
  local q, member = best_head()
  if q == nil then break end
  redis.call('ZREM', P_READY .. q, member)
  local id = string.sub(member, 17)
  local key = P_JOB .. id
  local h = redis.call('HMGET', key, 'state', 'rmember', 'queue', 'lease_ms', 'attempts')
  if h[1] == 'pending' and h[2] == member and h[3] == q then
    local lease = lease_override or tonumber(h[4])
    local until_ms = now + lease
    local token = token_base .. '.' .. (#claimed + 1)
    redis.call('HSET', key, 'state', 'active', 'token', token, 'lease_until', until_ms,
      'worker', worker, 'attempts', tonumber(h[5]) + 1, 'updated_ms', now)
    redis.call('ZADD', P_LEASED .. q, until_ms, id)
    claimed[#claimed + 1] = key
  else
    skips = skips + 1 -- dangling or stale ready entry, dropped
  end
end

local next_ms, more = nil, 0
for _, q in ipairs(queues) do
  if more == 0 and redis.call('ZCARD', P_READY .. q) > 0 then more = 1 end
  for _, k in ipairs({ P_DELAYED .. q, P_LEASED .. q }) do
    local head = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
    if #head > 0 then
      local s = tonumber(head[2])
      if s <= now then
        more = 1
      elseif next_ms == nil or s < next_ms then
        next_ms = s
      end
    end
  end
end

local out = { now, next_ms or '', more, #claimed }
for _, key in ipairs(claimed) do
  local fields = redis.call('HGETALL', key)
  out[#out + 1] = #fields
  for j = 1, #fields do out[#out + 1] = fields[j] end
end
return out
