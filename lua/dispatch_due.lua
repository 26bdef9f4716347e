#!lua
-- dispatch_due: enqueue the due slots of a namespace's target schedules as jobs
-- (issue 30, docs/schedules.md "Schedules that enqueue jobs").
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk: (unused: the guard's
--   head, as every schedule script takes it)
-- KEYS[4] the target index (zset id -> next run ms) <prefix>:{<ns>}:due:t
-- KEYS[5] the due index <prefix>:{<ns>}:due (a record met in the wrong index moves there)
-- KEYS[6] finished jobs (zset id -> finish ms) <prefix>:{<ns>}:jdone (the job quota's count)
-- ARGV[3..10] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--   priorities, delayed, leased, listing, dedup
-- ARGV[11] namespace: the namespace (for the occurrence ids)
-- ARGV[12] max_slots: most slots this call enqueues (bounds the work per call)
-- ARGV[13] candidates: most index entries this call examines
-- ARGV[14] backfill_prefix: backfill set prefix <prefix>:{<ns>}:bf:
-- ARGV[15] runs_prefix: recent runs prefix <prefix>:{<ns>}:rr:
-- ARGV[16] max_jobs: most unfinished jobs the namespace may hold (0: no limit), as
--   enqueue_jobs.lua counts them: at the quota no slot is taken (they stay due) and the
--   reply says so
-- ARGV[17..] hint{hint_id, hint_rev, hint_expected_next_ms, hint_next_ms, hint_follow,
--   hint_skipped, hint_hand_out, hint_skipped_window}: groups of 8, one per plan the
--   caller computed after a "compute" entry: id, rev, expected next ms, new next ms
--   ("" none), new follow ("" | "end" | ms), slots skipped for catch-up, the slot to
--   enqueue ("" none: the plan only skips), slots skipped for the window (claim_due.lua's
--   hint)
-- Returns { now, earliest, overlap, slots, computes, at_quota (1: stopped at the job
--   quota, 0), slot entries..., compute entries... }
--   earliest: the lowest score left in the target index ("" empty), for the caller's
--     dispatch due set; overlap: slots skipped for overlap (the metric)
--   slot entry (slots of them): schedule id, job id (the occurrence id), due ms,
--     outcome ("created" | "duplicate": the job existed, nothing written), kind
--     ("scheduled" | "triggered" | "backfill"), run number, skipped, queue
--   compute entry (computes of them): a schedule whose next slot or catch-up plan
--     the caller must compute (time zones live in Rust): its record as a counted
--     record (item count, then lib/schedule.lua sched_reply)
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 2 (one script): taking a slot (lib/claim.lua cl_take: the policies, the run count,
--   the next run, the index entry, the recent runs) and creating its job are one
--   atomic step. The job's id is the slot's occurrence id, so a slot becomes at most
--   one job ever: a slot taken again (its write lost in a failover, a replayed
--   hint) finds its job and writes nothing ("duplicate"). A dispatcher killed
--   between calls leaves every slot either taken with its job or still due.
-- * 1 (derived index): every candidate is re-validated against its record
--   (cl_validate) and stale entries repaired; a record without a target met here is
--   moved to the due index (and a target record met by claim_due moved here), so
--   ClaimDueSchedule never hands out a target schedule.
-- * 3 (no O(N)): at most ARGV[13] candidates read by ZRANGEBYSCORE ... LIMIT, at most
--   ARGV[12] jobs created; per slot O(log N) (the job's writes, as enqueue_jobs).
-- * overlap (lib/claim.lua): under SKIP and BUFFER_ONE the slot's job id is the
--   schedule's outstanding one; a later slot is skipped or buffered while that job is
--   pending, delayed or active (one GET of its record). No job script tells the
--   schedule when the job ends, so a buffered slot's record is indexed at most
--   lib/schedule.lua TARGET_RECHECK_MS ahead and looked at again then.
-- * catch-up: as claim_due, a schedule behind under its policy is planned in Rust
--   ("compute") and the plan applied under the same rev/next check; ALL enqueues one
--   missed slot per take, the record's next run being the cursor.
-- * 5: refused (lib/guard.lua, lib/job.lua jobs_guard) in a namespace whose schedules
--   or jobs need Migrate.
-- * 7 (one clock): "now" is Redis TIME.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
local meta = KEYS[1]
-- (The main function may hold at most 200 locals, and the preludes take most of
-- them: this body reuses `refused`, inlines its one-use constants and keeps its
-- later values inside blocks and functions.)
local layout
refused, layout = jobs_guard(meta)
if refused then return refused end

local now = now_ms()
local K = job_keys(ARGV, 3)
CL.now, CL.meta, CL.due_key, CL.base_due = now, meta, KEYS[4], KEYS[5]
CL.prefix, CL.namespace = ARGV[1], ARGV[11]
CL.backfill_prefix, CL.runs_prefix, CL.worker = ARGV[14], ARGV[15], ''
CL.targets, CL.track, CL.outcome = true, true, 'enqueued'
local max_slots = tonumber(ARGV[12])
local quota, unfinished, at_quota = tonumber(ARGV[16]), 0, 0
if quota > 0 then
  unfinished = tonumber(redis.call('HGET', meta, 'stored') or '0') - redis.call('ZCARD', KEYS[6])
end

-- Whether the job quota leaves room for one more job (else the call stops).
local function room()
  if quota > 0 and unfinished >= quota then at_quota = 1 end
  return at_quota == 0
end

-- The overlap check: the schedule's previous job is pending, delayed or active.
CL.live = function(r)
  local p = packed_load(K.job .. r.outstanding)
  if type(p) ~= 'table' or p.err ~= nil then return false end
  local state = p[P_STATE]
  return state == STATE_CODE.pending or state == STATE_CODE.delayed
    or state == STATE_CODE.active
end
-- A backfilled slot whose job exists already is not taken again.
CL.leased = function(occ)
  return redis.call('EXISTS', K.job .. occ) == 1
end

local slots, computes, created = {}, {}, 0
local SLOT_ITEMS = 8

-- The schedule's slot as a job (its target, lib/schedule.lua position 17).
local function enqueue(c, occ, due_ms, kind, skipped)
  local r = c.r
  local outcome = 'duplicate'
  local t = cjson.decode(r.target)
  if redis.call('EXISTS', K.job .. occ) == 0 then
    if layout == nil then
      jobs_first(meta) -- the namespace's first jobs (lib/job.lua)
      layout = JOBS_LAYOUT
    end
    local headers = t.headers or {}
    if r.headers ~= '' and r.headers ~= '{}' then
      local own = cjson.decode(r.headers)
      for k, v in pairs(headers) do own[k] = v end
      headers = own
    end
    local encoded = '{}'
    if next(headers) ~= nil then encoded = cjson.encode(headers) end
    local gseq = redis.call('HINCRBY', meta, 'gseq', 1)
    job_create(K, meta, now, occ, job_numbers(meta, t.queue, 1), gseq, {
      queue = t.queue, name = r.job_name, payload = r.payload, headers = encoded,
      priority = t.priority, run_at = now, max_attempts = t.max_attempts,
      backoff = t.backoff, base = t.base_ms, cap = t.cap_ms, jitter = t.jitter,
      lease_ms = t.lease_ms, dedup = '', dedup_ttl = '', schedule = c.id, due = due_ms,
      run = r.runs })
    created = created + 1
    unfinished = unfinished + 1
    outcome = 'created'
  end
  local n = #slots
  slots[n + 1], slots[n + 2], slots[n + 3], slots[n + 4] = c.id, occ, due_ms, outcome
  slots[n + 5], slots[n + 6], slots[n + 7], slots[n + 8] = kind, r.runs, skipped, t.queue
end

local function take(c, due_ms, new_next, new_follow, skipped, skipped_window, kind)
  local occ
  occ, skipped = cl_take(c, due_ms, new_next, new_follow, skipped, skipped_window, kind)
  if occ then enqueue(c, occ, due_ms, kind, skipped) end
end

-- 1. The caller's plans, each re-checked (lib/claim.lua cl_hint).
for b = 17, #ARGV, 8 do
  if not room() then break end
  local c = cl_hint(ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5],
    ARGV[b + 6], ARGV[b + 7])
  if is_error(c) then return c end
  if c then
    take(c, tonumber(ARGV[b + 6]), tonumber(ARGV[b + 3]), ARGV[b + 4],
      tonumber(ARGV[b + 5]) or 0, tonumber(ARGV[b + 7]) or 0, 'scheduled')
  end
end

-- 2. The earliest due candidates, in score order; a schedule whose plan must be
-- computed is answered, and the others go on.
-- One candidate (a function of its own: the main function's locals are near Lua's
-- limit of 200); an error reply to return, else nil.
local function consider(id, score)
  local c = cl_validate(id, score)
  if is_error(c) then return c end
  if c then
    local due_ms, new_next, new_follow, skipped, skipped_window, kind = cl_plan(c)
    if due_ms == nil then
      local fields = sched_reply(c.id, c.r)
      computes[#computes + 1] = #fields
      for j = 1, #fields do computes[#computes + 1] = fields[j] end
    else
      take(c, due_ms, new_next, new_follow, skipped, skipped_window, kind)
    end
  end
  return nil
end

do
  local cands = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'WITHSCORES', 'LIMIT', 0,
    tonumber(ARGV[13]))
  for i = 1, #cands, 2 do
    if #slots / SLOT_ITEMS >= max_slots or not room() then break end
    local refusal = consider(cands[i], cands[i + 1])
    if refusal then return refusal end
  end
end

jobs_stored(meta, created, now)
local function reply()
  local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  local out = { now, tonumber(first[2]) or '', CL.overlap_skips, #slots / SLOT_ITEMS, 0,
    at_quota }
  for j = 1, #slots do out[#out + 1] = slots[j] end
  local n_computes = 0
  local j = 1
  while j <= #computes do
    local len = computes[j]
    for k = j, j + len do out[#out + 1] = computes[k] end
    j = j + len + 1
    n_computes = n_computes + 1
  end
  out[5] = n_computes
  return out
end
return reply()
