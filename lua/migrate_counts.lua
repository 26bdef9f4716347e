#!lua
-- migrate_counts: count one queue's pending, waiting and dead jobs for a namespace whose jobs
-- predate the queue counts (meta `counts` unset), one bounded batch per call; or,
-- with an empty queue name, record that every queue is counted.
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- KEYS[3] lock                                    <prefix>:{<ns>}:migrate_lock
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] token: lock token   ARGV[10] queue: queue name ("" = finish)
-- ARGV[11] batch: most jobs per call
-- Returns { "ok", done (1 when the queue, or the namespace, is counted), jobs visited }
--       | { "lost" } (the Migrate lock is not ours: nothing written)
--
-- The walk goes through the queue's listing buckets in job-number order. meta
-- `rc:<queue>` is the next job number it visits (-1 once done); the transition
-- scripts count a job of the queue only below it (lib/job.lua count_pending), and the
-- walk counts each job it visits by the state it has then, so a job is counted
-- exactly once whatever runs between two batches (invariant 1: the counts stay
-- derived from the records). Its first call zeroes the queue's count and registers
-- the queue; dead jobs met join the queue's dead set (ZADD: idempotent). Invariant 3:
-- O(batch) per call; invariant 5: refused while the jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
if redis.call('GET', KEYS[3]) ~= ARGV[9] then return { 'lost' } end
local meta = KEYS[2]
local K = job_keys(ARGV, 1)
local queue, batch = ARGV[10], tonumber(ARGV[11])
if COUNTS_KEPT then return { 'ok', 1, 0 } end
if queue == '' then
  redis.call('HSET', meta, 'counts', '1')
  return { 'ok', 1, 0 }
end

local rc = 'rc:' .. queue
local cursor = tonumber(redis.call('HGET', meta, rc))
if cursor == -1 then return { 'ok', 1, 0 } end
if cursor == nil then
  cursor = 1
  redis.call('HSET', meta, rc, cursor)
  redis.call('HSET', queue_state(meta, queue), 'pending', 0, 'waiting', 0)
  redis.call('ZADD', queue_registry(meta), 'NX', 0, queue)
end

local last = tonumber(redis.call('HGET', meta, 'n:' .. queue)) or 0
local visited, pending, waiting = 0, 0, 0
while cursor <= last and visited < batch do
  local bucket = math.floor(cursor / LISTING_BUCKET)
  local fields = redis.call('HGETALL', listing_bucket(K, queue, cursor))
  for i = 1, #fields, 2 do
    local n = bucket * LISTING_BUCKET + tonumber(fields[i])
    if n >= cursor then
      local id = fields[i + 1]
      local r = job_load(K.job .. id)
      if r and not is_error(r) and r.queue == queue and r.n == n then
        if r.state == 'pending' then
          pending = pending + 1
        elseif r.state == 'waiting' then
          waiting = waiting + 1
        elseif r.state == 'dead' then
          dead_add(meta, id, r, r.finished ~= '' and r.finished or 0)
        end
      end
      visited = visited + 1
    end
  end
  cursor = (bucket + 1) * LISTING_BUCKET
  visited = visited + 1 -- an empty bucket costs a call too
end
if pending > 0 then redis.call('HINCRBY', queue_state(meta, queue), 'pending', pending) end
if waiting > 0 then redis.call('HINCRBY', queue_state(meta, queue), 'waiting', waiting) end
if cursor > last then
  redis.call('HSET', meta, rc, -1)
  return { 'ok', 1, visited }
end
redis.call('HSET', meta, rc, cursor)
return { 'ok', 0, visited }
