#!lua
-- enqueue_jobs: store a batch of jobs (a single Enqueue is a batch of one).
--
-- KEYS[1] namespace meta (hash: schema, jobs, n:<queue>, stored)   <prefix>:{<ns>}:meta
-- KEYS[2] finished jobs (zset id -> finish ms)                     <prefix>:{<ns>}:jdone
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] schema: schema version   ARGV[10] count: number of jobs n
-- ARGV[11] max_jobs: most unfinished jobs the namespace may hold (0: no limit)
-- ARGV[12..] job{id, queue, name, payload, headers, priority, when, when_ms,
--   max_attempts, backoff, base_ms, cap_ms, jitter, lease_ms, dedup_key, dedup_ttl_ms,
--   dedup_mode, retain, flow}: 19 values per job: headers a JSON object, when "" (now) |
--   "at" | "delay" and when_ms its value, backoff "fixed" | "exp", jitter in 0..1,
--   dedup_key "" for none, dedup_mode "skip" | "replace" | "extend", retain the job's
--   own retention rule ("" the server default; lib/job.lua retention.finish), flow
--   its flow keys and cost (issue 32): "" for none and cost 1, else
--   "<cost>:<lane>" (cost "" for 1; lane as lib/flow.lua flow.lane composes it)
-- Returns one triple per job, in order: { outcome, job id, state }
--   outcome: "created" | "duplicate" | "replaced" | "extended"
--            | "quota" (not written: the namespace holds ARGV[11] unfinished jobs;
--              state is "")
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 1 (canonical record, derived indexes): the job record, its ready-list or delayed
--   entry and its listing entry are written together, here.
-- * 2 (one script): the idempotency check (job id exists), the dedup check and the
--   write are one atomic step, so concurrent enqueues with one id or one dedup key
--   create one job.
-- * 3 (no O(N)): per created job four calls (EXISTS, SET, HSET into a listing bucket
--   of at most 64, RPUSH or ZADD), one more SET for a payload over 1 KiB, plus two
--   HINCRBYs per queue (its job numbers; its pending count), one
--   ZADD per new ready list and one per new queue (the queue registry). FIFO: a ready list is pushed at the tail and popped at the head.
-- * 5: refused while the namespace's jobs are in an older layout, or while its meta
--   has lost the job layout and the jobs marker or the data (the batch's queues,
--   the finished set) shows stored jobs.
-- * 9 (bounded): the quota counts unfinished jobs in O(1): `stored` in meta counts
--   job records created since `stored_since` (created here, deleted only by
--   prune_jobs.lua, which takes off the counted ones) and the finished set holds the
--   finished ones, so unfinished = stored - ZCARD. Jobs stored before the count
--   began make it low until they have finished and been pruned. Only a create is
--   refused; duplicates, replaces and extends write no record.
-- * queue state (lib/job.lua): a created pending job counts in its queue's pending
--   count; a queue's first jobs add it to the queue registry.
-- * 7 (one clock): run times are computed from Redis TIME.

local meta = KEYS[1]
local K = job_keys(ARGV, 1)
-- Job i's 19 values start after b = 11 + i * FIELDS; these name the offsets this
-- script reads itself (lib/job.lua job_spec reads the rest, the one place their order
-- is spelled out).
local FIELDS = 19
local ID, QUEUE, PAYLOAD, HEADERS = 1, 2, 4, 5
local DEDUP_KEY, DEDUP_TTL, DEDUP_MODE = 15, 16, 17
-- Called by the guard only when meta has no job layout: whether the batch's queues
-- or the finished set hold jobs (lib/job.lua held_probe).
local function probe()
  local queues = {}
  for i = 0, tonumber(ARGV[10]) - 1 do queues[#queues + 1] = ARGV[11 + i * FIELDS + QUEUE] end
  return held_probe(K, meta, KEYS[2], queues)
end
local refused, layout = jobs_guard(meta, probe)
if refused then return refused end
local now = now_ms()
if layout == nil then jobs_first(meta) end -- (lib/job.lua)
local n = tonumber(ARGV[10])
local quota = tonumber(ARGV[11])
local unfinished = 0
if quota > 0 then
  unfinished = tonumber(redis.call('HGET', meta, 'stored') or '0') - redis.call('ZCARD', KEYS[2])
end
local created = 0
local out = {}
-- Pending counts per queue, one HINCRBY each after the loop (lib/job.lua job_create),
-- and before a corrupt record's error ends the call early, so the counts always
-- match the records written.
local pending = {}
local function counted(reply)
  pending_flush(meta, pending)
  jobs_stored(meta, created, now) -- (the quota's count: lib/job.lua)
  return reply
end

-- One counter step per queue per batch: the batch's jobs of a queue take consecutive
-- numbers. A duplicate leaves a gap, which is harmless (numbers only order jobs).
local per_queue, next_n = {}, {}
for i = 0, n - 1 do
  local q = ARGV[11 + i * FIELDS + QUEUE]
  per_queue[q] = (per_queue[q] or 0) + 1
end
for q, count in pairs(per_queue) do
  next_n[q] = job_numbers(meta, q, count) -- (registers a new queue: lib/job.lua)
end
-- The namespace-wide order of jobs, for claims across queues of equal priority.
local gseq = redis.call('HINCRBY', meta, 'gseq', n) - n

for i = 0, n - 1 do
  local b = 11 + i * FIELDS
  local id, queue = ARGV[b + ID], ARGV[b + QUEUE]
  local key = K.job .. id
  local dedup_key, dedup_ttl, dedup_mode = ARGV[b + DEDUP_KEY], ARGV[b + DEDUP_TTL], ARGV[b + DEDUP_MODE]
  local outcome, result_id, state = nil, id, nil
  local job_n = next_n[queue]
  next_n[queue] = job_n + 1

  if redis.call('EXISTS', key) == 1 then
    outcome = 'duplicate'
  elseif dedup_key ~= '' then
    local dkey = K.dedup .. dedup_key
    local holder = redis.call('GET', dkey)
    if holder and redis.call('EXISTS', K.job .. holder) == 1 then
      result_id = holder
      if dedup_mode == 'replace' then
        local hkey = K.job .. holder
        local r = job_load(hkey)
        if is_error(r) then return counted(r) end
        state = r.state
        if state == 'pending' or state == 'delayed' then
          local headers = ARGV[b + HEADERS]
          if headers == '{}' then headers = '' end
          set_payload(K, holder, r, ARGV[b + PAYLOAD])
          r.headers, r.updated = headers, now
          job_save(hkey, r)
          outcome = 'replaced'
        else
          outcome = 'duplicate'
        end
      elseif dedup_mode == 'extend' then
        redis.call('PEXPIRE', dkey, dedup_ttl)
        outcome = 'extended'
      else
        outcome = 'duplicate'
      end
    end
  end

  if outcome == nil and quota > 0 and unfinished >= quota then
    outcome, state = 'quota', ''
  end
  if outcome == nil then
    outcome = 'created'
    created = created + 1
    unfinished = unfinished + 1
    state = job_create(K, meta, now, id, job_n, gseq + i + 1, job_spec(ARGV, b, now), pending)
  end

  if state == nil then
    local r = job_load(K.job .. result_id)
    if is_error(r) then return counted(r) end
    state = r and r.state or ''
  end
  out[#out + 1] = outcome
  out[#out + 1] = result_id
  out[#out + 1] = state
end

return counted(out)
