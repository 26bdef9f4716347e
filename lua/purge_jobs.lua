#!lua flags=allow-oom
-- purge_jobs: delete up to a batch of a queue's jobs in one state (issue 14).
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] queue: the queue   ARGV[10] state: "pending" | "delayed" | "dead"
-- ARGV[11] limit: most jobs to delete (the caller bounds it: at most 500)
-- ARGV[12] fingerprint: with state "dead", only the dead jobs of this group of the
--          queue (issue 33, lib/job.lua dg; "" = every dead job of the queue)
-- Returns { purged, more (1 if jobs in that state may remain in the queue), register
--           (1: put the namespace in the prune due-set: a flow finished) }
--
-- The state's own index is the work list: the delayed set, the queue's dead set (or
-- the group's set, with a fingerprint; a dead job leaves both, dead_remove), or
-- the ready lists (popped from the head, best priority first) and then the queue's
-- flow lanes (lib/flow.lua flow.purge_lanes: every place a lane can be). Each entry is
-- re-validated against its record (invariant 1): only a job still in that state and
-- queue is deleted (record, payload, listing entry, its dedup key when it still
-- names the job, its finished-set entry), and a pending one leaves the queue's pending
-- count; a stale entry is dropped and counts against the batch. Active jobs are not
-- purgeable (a worker holds the lease). Idempotent: a purged job is gone from its
-- index, so a repeated call finds the next. Invariant 3: O(batch log N).
-- Invariant 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local K = job_keys(ARGV, 1)
local meta, queue, state, limit = KEYS[2], ARGV[9], ARGV[10], tonumber(ARGV[11])
local fingerprint = ARGV[12]
if fingerprint ~= '' and state ~= 'dead' then
  return redis.error_reply('DUEQ_BAD_STATE ' .. state)
end

local now = now_ms()
local register = 0

-- Deletes job id (record r) from every index; a pending or delayed node of a flow
-- (issue 34) is cancelled instead (lib/job.lua cancel_unstarted, which also leaves
-- its pending count): its dependents follow their rule, and its record stays with
-- its flow. Returns true when it was cancelled.
local function purge(id, r)
  if r.dag ~= '' and r.state ~= 'dead' then
    local _, asked = cancel_unstarted(K, meta, KEYS[1], K.job .. id, id, r, now)
    register = math.max(register, asked)
    return true
  end
  redis.call('DEL', K.job .. id)
  announce_gone(K.job .. id, r.watch) -- issue 30: a watcher hears it is gone
  drop_payload(K, id, r)
  listing_remove(K, r.queue, r.n)
  if r.dedup ~= '' and redis.call('GET', K.dedup .. r.dedup) == id then
    redis.call('DEL', K.dedup .. r.dedup)
  end
  redis.call('ZREM', KEYS[1], id)
  retention.forget(meta, id, r) -- (lib/job.lua, issue 36)
  return false
end

local function live(id)
  local r = job_load(K.job .. id)
  if r and not is_error(r) and r.state == state and r.queue == queue then return r end
  return nil
end

local purged, visited, more = 0, 0, 0

-- A ready entry (a job number, as a ready list or a lane holds it) met: its job is
-- deleted when it is still that pending job of the queue.
local function purge_pending(entry)
  visited = visited + 1
  local n = tonumber(entry)
  local id = listing_id(K, queue, n)
  local r = id and live(id)
  if r and r.n == n then
    if not purge(id, r) then count_pending(meta, r, -1) end
    purged = purged + 1
  end
end
if state == 'dead' or state == 'delayed' then
  local index = K.delayed .. queue
  if state == 'dead' then index = queue_dead(meta, queue) end
  if fingerprint ~= '' then index = dg.set(meta, fingerprint, queue) end
  for _, id in ipairs(redis.call('ZRANGE', index, 0, limit - 1)) do
    local r = live(id)
    if r then
      if state == 'dead' then dead_remove(meta, id, r) end
      purge(id, r)
      purged = purged + 1
    end
    redis.call('ZREM', index, id)
  end
  if redis.call('ZCARD', index) > 0 then more = 1 end
elseif state == 'pending' then
  local pkey = K.prio .. queue
  while visited < limit do
    local top = redis.call('ZRANGE', pkey, 0, 0)
    if #top == 0 then break end
    local list = ready_list(K, queue, top[1])
    local entry = redis.call('LPOP', list)
    if not entry then
      redis.call('ZREM', pkey, top[1])
    else
      purge_pending(entry)
    end
  end
  if redis.call('ZCARD', pkey) > 0 then more = 1 end
  -- Then the jobs waiting in flow lanes (issue 32, lib/flow.lua), lane by lane.
  if more == 0 and visited < limit then
    local lanes_left = flow.purge_lanes(meta, queue, function(L)
      local lkey = flow.key(meta, 'l', queue, L)
      local entries = redis.call('ZRANGE', lkey, 0, limit - visited - 1)
      for _, m in ipairs(entries) do purge_pending(m) end
      if #entries > 0 then
        redis.call('ZREM', lkey, unpack(entries))
        local f, c, rk = flow.lane_keys(L)
        flow.backlog(meta, queue, f, c, rk, -#entries)
      end
      return redis.call('EXISTS', lkey) == 0
    end)
    if lanes_left then more = 1 end
  end
else
  return redis.error_reply('DUEQ_BAD_STATE ' .. state)
end
return { purged, more, register }
