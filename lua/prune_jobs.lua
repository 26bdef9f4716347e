#!lua flags=allow-oom
-- prune_jobs: delete finished (completed, dead, cancelled) jobs past the retention
-- age, the oldest ones beyond the retention count, and the jobs whose own keep_for
-- rule has run out (issue 36), and the nodes of the flows (issue 34) that finished
-- before the retention age, at most a batch per call. Jobs kept by their own rule
-- (lib/job.lua retention.finish) and nodes of flows are left out of the age and the
-- count: a flow's nodes go together, never while it runs (lib/graph.lua). It also
-- takes the next steps of the namespace's queued graph work (graph.drain) and deletes
-- what an unfinished store of a flow wrote once it was given up.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta (`stored` loses the counted records deleted, see
--         enqueue_jobs.lua; the keep_for jobs' expiry set is composed from it,
--         lib/job.lua retention.expiry)           <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] max_age_ms: retention age ms   ARGV[10] keep: retention count
-- ARGV[11] batch: batch size
-- Returns { deleted, more (1 if another call would delete more), finished jobs kept,
--           next ms: when the oldest kept job or finished flow passes the retention
--           age or the earliest keep_for job expires, whichever is first ("" none) }
-- The caller keeps the namespace in the prune due-set (outside this slot, so written
-- by plain commands after this script) scored by next ms, or drops it when none.
--
-- Invariant 3 (docs/DESIGN.md): O(batch log N) per call; the caller (a background task, off the
-- request path) calls again while `more`. Only jobs in the finished set are ever
-- deleted, and a job is in it only while completed, dead or cancelled (retry_job
-- removes it), so no live job is pruned. The job goes from every index (lib/job.lua
-- job_remove), its dedup key too when that still names this job. Invariant 5:
-- refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local done = KEYS[1]
local age, keep, batch = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local meta = KEYS[2]

local function delete(id)
  local r = job_load(K.job .. id)
  if r == nil or is_error(r) or (r.state ~= 'completed' and r.state ~= 'dead'
      and r.state ~= 'cancelled') then
    -- A stale entry (the job was revived, or is gone): drop the entry, keep the job.
    redis.call('ZREM', done, id)
    redis.call('ZREM', retention.expiry(meta), id)
    return
  end
  job_remove(K, meta, done, id, r, true) -- (lib/job.lua)
end

local deleted = 0
local old = redis.call('ZRANGEBYSCORE', done, '-inf', now - age, 'LIMIT', 0, batch)
for _, id in ipairs(old) do
  delete(id)
  deleted = deleted + 1
end
-- Jobs kept by their own rule (scored from RULE_BASE up) are not counted.
local rule_from = string.format('%d', retention.RULE_BASE)
local excess = redis.call('ZCARD', done) - redis.call('ZCOUNT', done, rule_from, '+inf') - keep
if excess > 0 and deleted < batch then
  local n = math.min(excess, batch - deleted)
  for _, id in ipairs(redis.call('ZRANGE', done, 0, n - 1)) do
    delete(id)
    deleted = deleted + 1
  end
end
-- keep_for jobs whose time is up (issue 36).
local expiry = retention.expiry(meta)
if deleted < batch then
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0,
      batch - deleted)) do
    delete(id)
    deleted = deleted + 1
  end
end
-- Flows (issue 34): a finished flow's nodes go together, once the flow passed the age
-- (lib/graph.lua graph.prune), oldest flow first.
local dags = graph.done_set(meta)
-- Queued graph work first (lib/graph.lua "Bounded work"): its steps count against
-- the batch; then the stores of flows given up (no call for graph.STAGE_TTL_MS).
graph.drain(K, meta, done, now)
deleted = deleted + graph.spent
local stages = graph.stage_set(meta)
while deleted < batch do
  local due = redis.call('ZRANGEBYSCORE', stages, '-inf', now, 'LIMIT', 0, 1)
  if #due == 0 then break end
  deleted = deleted + graph.prune(K, meta, done, due[1], batch - deleted)
end
while deleted < batch do
  local due = redis.call('ZRANGEBYSCORE', dags, '-inf', now - age, 'LIMIT', 0, 1)
  if #due == 0 then break end
  deleted = deleted + graph.prune(K, meta, done, due[1], batch - deleted)
end
local more = 0
if deleted >= batch or redis.call('EXISTS', graph.queue(meta)) == 1 then more = 1 end
local next_ms = ''
local oldest = redis.call('ZRANGEBYSCORE', done, '-inf', '(' .. rule_from, 'WITHSCORES', 'LIMIT',
  0, 1)
if #oldest > 0 then next_ms = tonumber(oldest[2]) + age end
local oldest_dag = redis.call('ZRANGE', dags, 0, 0, 'WITHSCORES')
if #oldest_dag > 0 and (next_ms == '' or tonumber(oldest_dag[2]) + age < next_ms) then
  next_ms = tonumber(oldest_dag[2]) + age
end
local stage_due = redis.call('ZRANGE', stages, 0, 0, 'WITHSCORES')
if #stage_due > 0 and (next_ms == '' or tonumber(stage_due[2]) < next_ms) then
  next_ms = tonumber(stage_due[2])
end
local expires = redis.call('ZRANGE', expiry, 0, 0, 'WITHSCORES')
if #expires > 0 and (next_ms == '' or tonumber(expires[2]) < next_ms) then
  next_ms = tonumber(expires[2])
end
return { deleted, more, redis.call('ZCARD', done), next_ms }
