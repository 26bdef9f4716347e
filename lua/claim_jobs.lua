#!lua
-- claim_jobs: lease up to max_jobs claimable jobs from a set of queues.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] key prefixes (lib/job.lua job_keys): job, payload, ready, priorities,
--            delayed, leased, listing, dedup
-- ARGV[9]  lease token base (random, minted by the caller; token = base .. "." .. i)
-- ARGV[10]  lease ms for these claims ("" = each job's own default lease)
-- ARGV[11]  max jobs to claim
-- ARGV[12] worker id
-- ARGV[13] budget: most expired leases re-handed, most delayed jobs promoted per
--          queue, and most stale ready entries dropped, in this call
-- ARGV[14] reply byte budget: no job is leased past the first whose reply would take
--          the jobs' bytes (lib/job.lua job_bytes) over it
-- ARGV[15] number of acks A carried by this claim (issue 15), applied first
-- ARGV[16..] the A acks (job id, lease token: 2A values), then the queue names
-- Returns { now, next_ms, more, register, n, then per claimed job: field count,
--           fields..., then per queue in ARGV order: leases that expired here,
--           then per ack in ARGV order: tag, detail }
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
-- * 3 (no O(N)): expired leases are found by ZRANGEBYSCORE on the per-queue lease set
--   (scored by deadline) and delayed jobs by ZRANGEBYSCORE on the delayed set, each
--   bounded by ARGV[13]; a claim reads the best priority of each queue (ZRANGE 0 0),
--   the head of its list (LINDEX 0), pops it (LPOP) and resolves the job number to
--   its id in a listing bucket of at most 64 (HGET).
-- * 4 (a crash never loses work): a claimed job is in the lease set until acked,
--   failed or re-handed; an expired lease makes it pending again here (attempt + 1 at
--   its next claim) or dead if it has used max_attempts.
-- * 4: each carried ack is AckJob's transition (lib/job.lua complete_job), applied
--   before anything is claimed; a refused ack changes nothing and stops nothing.
-- * 5: refused while the namespace's jobs are in an older layout.
-- * queue state (lib/job.lua): every move into or out of pending changes its queue's
--   pending count and a job going dead enters its queue's dead set, here; a paused
--   queue (one HGET per queue) is skipped entirely.
-- * 7 (one clock): Redis TIME decides what is due and what is expired.
-- * 9 (bounded replies): a job the reply could not carry is not leased; it stays at
--   the head of its list for the next claim. The first job is always leased: the
--   service refuses a payload limit that cannot fit in one message.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local done = KEYS[1]
local token_base, lease_override = ARGV[9], tonumber(ARGV[10])
local max_jobs, worker, budget = tonumber(ARGV[11]), ARGV[12], tonumber(ARGV[13])
local max_bytes = tonumber(ARGV[14])
local register = 0
local expired = {}
local acks = tonumber(ARGV[15])
local queues = {}
for i = 16 + 2 * acks, #ARGV do queues[#queues + 1] = ARGV[i] end

-- 0. The acks this claim carries: each exactly as AckJob (invariant 4), so a worker
-- finishes its last jobs and fetches the next ones in one round trip and one script.
local acked = {}
for i = 16, 15 + 2 * acks, 2 do
  local outcome, reg = complete_job(K, done, ARGV[i], ARGV[i + 1], now)
  register = math.max(register, reg)
  if is_error(outcome) then
    acked[#acked + 1] = { 'corrupt', outcome.err }
  else
    acked[#acked + 1] = { outcome[1], outcome[2] or '' }
  end
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
        if r.attempts >= r.max_attempts then
          r.state, r.finished = 'dead', now
          job_save(key, r)
          register = math.max(register, finish_entry(done, id, now))
          dead_add(KEYS[2], id, r, now)
        else
          r.state, r.run_at = 'pending', now
          job_save(key, r)
          ready_push(K, queue, r.priority, r.n, true)
          count_pending(KEYS[2], r, 1)
        end
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
        ready_push(K, queue, r.priority, r.n, false)
        count_pending(KEYS[2], r, 1)
      end
    end
  end
end

-- A paused queue is left alone: nothing of it is reclaimed, promoted or claimed, and
-- it adds nothing to next_ms or more (so no timer wakes a long-poll for it).
local all_queues = queues
queues = {}
for _, q in ipairs(all_queues) do
  if not queue_paused(KEYS[2], q) then queues[#queues + 1] = q end
end

for _, q in ipairs(queues) do
  reclaim(q)
  promote(q)
end

-- 3. The head of a queue's best ready list: { list, score, n, queue } or nil. A
-- registered priority whose list is gone is dropped on the way.
local function head(q)
  local pkey = K.prio .. q
  while true do
    local top = redis.call('ZRANGE', pkey, 0, 0, 'WITHSCORES')
    if #top == 0 then return nil end
    local list = ready_list(K, q, top[1])
    local n = redis.call('LINDEX', list, 0)
    if n then
      return { list = list, score = tonumber(top[2]), n = tonumber(n), queue = q }
    end
    redis.call('ZREM', pkey, top[1])
  end
end

-- The job a head names, if it is still the pending job that entry was made for: its
-- id and record. (A cancelled job's entry stays behind; a pruned job's number no
-- longer resolves.)
local function head_job(h)
  local id = listing_id(K, h.queue, h.n)
  if not id then return nil end
  local r = job_load(K.job .. id)
  if r and not is_error(r) and r.state == 'pending' and r.queue == h.queue
      and r.n == h.n and -r.priority == h.score then
    return id, r
  end
  return nil
end

-- Order of a head among equal priorities: its job's namespace-wide enqueue number.
-- A stale head sorts first, so it is popped and dropped.
local function head_order(h)
  local _, r = head_job(h)
  if r then return r.gseq end
  return -1
end

-- The best head across the queues: highest priority, then earliest enqueued.
local function best_head()
  local best, best_order = nil, nil
  for _, q in ipairs(queues) do
    local h = head(q)
    if h then
      if best == nil or h.score < best.score then
        best, best_order = h, nil
      elseif h.score == best.score then
        best_order = best_order or head_order(best)
        local order = head_order(h)
        if order < best_order then best, best_order = h, order end
      end
    end
  end
  return best
end

local claimed = {}
local skips, bytes = 0, 0
while #claimed < max_jobs and skips < budget do
  local h = best_head()
  if h == nil then break end
  local id, r = head_job(h)
  if r then
    bytes = bytes + job_bytes(K, id, r, true, false) + #worker
    if #claimed > 0 and bytes > max_bytes then break end
  end
  redis.call('LPOP', h.list)
  if r then
    local key = K.job .. id
    local lease = lease_override or r.lease_ms
    local until_ms = now + lease
    r.state, r.token, r.lease_until = 'active', token_base .. '.' .. (#claimed + 1), until_ms
    r.worker, r.attempts, r.updated = worker, r.attempts + 1, now
    job_save(key, r)
    redis.call('ZADD', K.leased .. h.queue, until_ms, id)
    count_pending(KEYS[2], r, -1)
    claimed[#claimed + 1] = { id, r }
  else
    skips = skips + 1 -- dangling or stale ready entry (cancelled, pruned), dropped
  end
end

local next_ms, more = nil, 0
for _, q in ipairs(queues) do
  if more == 0 and redis.call('ZCARD', K.prio .. q) > 0 then more = 1 end
  for _, k in ipairs({ K.delayed .. q, K.leased .. q }) do
    local top = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
    if #top > 0 then
      local s = tonumber(top[2])
      if s <= now then
        more = 1
      elseif next_ms == nil or s < next_ms then
        next_ms = s
      end
    end
  end
end

local out = { now, next_ms or '', more, register, #claimed }
for _, c in ipairs(claimed) do push_record(out, K, c[1], c[2]) end
for _, q in ipairs(all_queues) do out[#out + 1] = expired[q] or 0 end
for _, a in ipairs(acked) do
  out[#out + 1] = a[1]
  out[#out + 1] = a[2]
end
return out
