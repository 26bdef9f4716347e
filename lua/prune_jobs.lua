#!lua flags=allow-oom
-- prune_jobs: delete finished (completed, dead, cancelled) jobs past the retention
-- age, and the oldest ones beyond the retention count, at most a batch per call.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta (`stored` loses the counted records deleted, see
--         enqueue_jobs.lua)                   <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] max_age_ms: retention age ms   ARGV[10] keep: retention count
-- ARGV[11] batch: batch size
-- Returns { deleted, more (1 if another call would delete more), finished jobs kept,
--           next ms: when the oldest kept job passes the retention age ("" none kept) }
-- The caller keeps the namespace in the prune due-set (outside this slot, so written
-- by plain commands after this script) scored by next ms, or drops it when none.
--
-- Invariant 3 (docs/DESIGN.md): O(batch log N) per call; the caller (a background task, off the
-- request path) calls again while `more`. Only jobs in the finished set are ever
-- deleted, and a job is in it only while completed, dead or cancelled (retry_job
-- removes it), so no live job is pruned. The job's listing entry and its dedup key
-- (when it still names this job) go with it. Invariant 5: refused while the
-- namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local done = KEYS[1]
local age, keep, batch = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])

-- Records enqueue_jobs.lua counted in `stored` (created since `stored_since`) that
-- this call deletes.
local counted_since = tonumber(redis.call('HGET', KEYS[2], 'stored_since') or '')
local counted_deleted = 0
local function delete(id)
  local key = K.job .. id
  redis.call('ZREM', done, id)
  local r = job_load(key)
  if r == nil or is_error(r) then return end
  if r.state ~= 'completed' and r.state ~= 'dead' and r.state ~= 'cancelled' then
    return -- a stale entry (the job was revived): drop the entry, keep the job
  end
  redis.call('DEL', key)
  announce_gone(key, r.watch) -- issue 30: a watcher hears it is gone
  if counted_since and tonumber(r.created) >= counted_since then
    counted_deleted = counted_deleted + 1
  end
  if r.state == 'dead' then dead_remove(KEYS[2], id, r) end
  drop_payload(K, id, r)
  listing_remove(K, r.queue, r.n)
  if r.dedup ~= '' and redis.call('GET', K.dedup .. r.dedup) == id then
    redis.call('DEL', K.dedup .. r.dedup)
  end
end

local deleted = 0
local old = redis.call('ZRANGEBYSCORE', done, '-inf', now - age, 'LIMIT', 0, batch)
for _, id in ipairs(old) do
  delete(id)
  deleted = deleted + 1
end
local excess = redis.call('ZCARD', done) - keep
if excess > 0 and deleted < batch then
  local n = math.min(excess, batch - deleted)
  for _, id in ipairs(redis.call('ZRANGE', done, 0, n - 1)) do
    delete(id)
    deleted = deleted + 1
  end
end
local more = 0
if deleted >= batch then more = 1 end
if counted_deleted > 0 then redis.call('HINCRBY', KEYS[2], 'stored', -counted_deleted) end
local oldest = redis.call('ZRANGE', done, 0, 0, 'WITHSCORES')
local next_ms = ''
if #oldest > 0 then next_ms = tonumber(oldest[2]) + age end
return { deleted, more, redis.call('ZCARD', done), next_ms }
