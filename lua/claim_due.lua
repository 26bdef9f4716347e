#!lua
-- claim_due: hand the earliest due occurrence of a namespace to one caller.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] due index (zset id -> next run ms) <prefix>:{<ns>}:due
-- KEYS[5] occurrence leases (zset occurrence id -> lease deadline ms) <prefix>:{<ns>}:oleases
-- ARGV[3] candidates: how many due candidates to examine at most (bounds the work per call)
-- ARGV[4..9] hint_id, hint_rev, hint_expected_next_ms, hint_next_ms, hint_follow,
--   hint_skipped: optional hint for a schedule the caller was asked to compute (a
--   cron's next slot, or any schedule's catch-up plan): id, rev, expected next ms, new
--   next ms ("" = none), new follow ms ("" | "end"), slots skipped for catch-up.
--   Empty ARGV[4] = no hint.
-- ARGV[10] lease_ms: lease ms for the claimed occurrence ("" = no lease: at-most-once)
-- ARGV[11] token: lease token (minted by the caller)
-- ARGV[12] namespace: the namespace (for the occurrence id)
-- ARGV[13] occurrence_prefix: occurrence lease record prefix <prefix>:{<ns>}:o:
-- ARGV[14] hint_hand_out: the hint's slot to hand out ("" = none: the plan only skips;
--   the claim then goes on to the other candidates)
-- ARGV[15] hint_skipped_window: the hint's slots skipped for the catch-up window
-- ARGV[16] finished_ttl_ms: how long a finished occurrence record is kept (ms): one
--   whose lease expired for the last time (max_attempts) is kept like an acked one
-- ARGV[17] backfill_prefix: backfill set prefix <prefix>:{<ns>}:bf: (a schedule id is appended)
-- ARGV[18] runs_prefix: recent runs prefix <prefix>:{<ns>}:rr: (a schedule id is appended)
-- ARGV[19] worker: the claiming worker's id (recorded in the recent runs)
-- Returns one of (overlap = slots this call skipped under OVERLAP_POLICY_SKIP or with
-- a full buffer, for the metric):
--   { "claimed", now, overlap, due_ms, skipped, earliest, token, lease_until, attempt,
--     occurrence id, kind ("scheduled" | "triggered" | "backfill"), fields... }
--        the claimed schedule after the claim (token, lease_until, attempt are "" without
--        a lease; fields: lib/schedule.lua sched_reply, marker first). With a lease, an
--        occurrence whose lease expired is re-handed first: same shape, attempt + 1,
--        the schedule fields as its copy kept them at its first claim (sched_fields,
--        no marker: the copy is as whichever build claimed it wrote it).
--   { "compute", now, overlap, earliest, id, rev, next_ms, fields... }  a cron schedule whose next slot after
--        now must be computed by the caller (time zones live in Rust), or a schedule
--        behind under its catch-up policy; nothing changed except repairs (and the
--        skips of a hint that handed nothing out)
--   { "none", now, overlap, earliest }  nothing due
--   earliest = lowest score left in the index or the occurrence leases ("" when both are
--   empty), for the wake-up timer.
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 1 (derived index): every candidate is re-validated against its record (exists, active,
--   next run <= now, run limit not reached, not past end) and each stale entry met is
--   repaired: dangling, paused, completed ones removed; ones whose record says later
--   re-scored. The claim itself (run count +1, last run = now, next run advanced) and
--   the index update happen in this one script.
-- * 3 (no O(N)): at most ARGV[3] candidates are read, by ZRANGEBYSCORE ... LIMIT.
-- * 4 (a crash never stalls): cron slots are computed in Rust, but this script only
--   ever moves a schedule from one valid next run to another. A hint is applied only
--   if rev and next_ms are still what the caller read, so a hint computed from old
--   timing or racing another claimer is refused. If the caller dies after "compute",
--   nothing was written: the schedule is still due and the next claimer computes it.
--   `follow_ms` (the slot after next_ms, precomputed) lets a cron claim finish in one
--   call; when it is missing or already past, the script asks instead of guessing.
--   An `every` schedule has one only after SetScheduleNextRun (set_schedule_next_run.lua)
--   set its next run, which may lie off the interval's grid: it is then used as a
--   cron's, so the grid goes on after the hand-set run (lib/claim.lua cl_plan,
--   cl_behind), and the claim that hands that run out clears it.
-- * 4 (at-least-once with a lease): a leased claim writes, in this same script, an
--   occurrence record <prefix>:{<ns>}:o:<occurrence id> (the schedule's fields at the
--   claim, the token, the deadline, the attempt) and indexes it in KEYS[5] by deadline.
--   The schedule itself advances exactly once, here; the record lives until acked
--   (ack_occurrence). A leased claim first re-hands the earliest expired occurrence
--   lease (found by ZRANGEBYSCORE on KEYS[5], O(log N)) with attempt + 1 and a new
--   token. The occurrence id is lib/rules.lua occurrence_id, the same UUIDv5 as
--   domain::occurrence_id, so the record and the id handed to the worker agree.
-- * every schedules advance here with lib/rules.lua every_advance, which a library
--   test pins to timing::Timing::advance.
-- * catch-up policies (docs/schedules.md, "Catch-up"): a schedule that is behind under its
--   policy (a slot older than its catch-up window is due, or, under SKIP or ALL, the
--   slot after the due one is due too) is answered with "compute": the caller
--   (timing::Timing::catch_up) plans which slot to hand out and how many to skip, and
--   the plan is applied under the same rev/next check as a cron hint. ALL hands out
--   one missed slot per claim: the record's next run is the cursor, so a claim never
--   loops over missed slots. Skips are counted on the record per reason.
-- * overlap policies (docs/schedules.md, "Overlap"): under SKIP and BUFFER_ONE a leased claim
--   records its occurrence id on the schedule (`outstanding`). A slot that comes due
--   while that occurrence is still leased and unacked (an expired lease that will be
--   re-handed is still outstanding) is not handed out: the schedule advances past it
--   as a claim would, and the slot is skipped (skipped_overlap) or, under BUFFER_ONE
--   with an empty buffer, kept as `buffered_ms`. The record's due score is
--   sched_due_at: the buffered slot once the outstanding occurrence ended. It ends
--   when acked (ack_occurrence releases the slot in its script) or when its lease
--   expires for the last time (max_attempts hand-outs; finished here, by the first
--   claim that meets it). One extra HMGET per candidate that tracks an occurrence.
-- * TriggerSchedule (trigger_schedule.lua) leaves one triggered occurrence on the
--   record (trigger_ms, trigger_rev), which sched_due_at puts in the index; a claim
--   hands it out like a slot but leaves the next run as it is. Its overlap was
--   checked when it was triggered.
-- * BackfillSchedule (backfill_schedule.lua) puts slots in the schedule's backfill set
--   and their earliest on the record (backfill_ms), which sched_due_at puts in the
--   index; a claim hands out that one slot (the id the timing gives it) and moves
--   backfill_ms to the next one by ZRANGE: O(log N), one slot per claim, oldest
--   first. A backfilled slot whose occurrence record is still leased (the live slot
--   is being worked on) is dropped instead of overwriting that lease.
-- * jitter: a record with jitter_ms is indexed at its next run plus sched_jitter (a
--   deterministic offset from the slot's occurrence id), so no replica claims it
--   before then; the occurrence keeps its nominal due time.
-- * 7 (one clock): "now" is Redis TIME, never the caller's clock.
-- * 5: refused (lib/guard.lua) in a namespace that needs Migrate; every completion
--   decrements the meta `indexed` count.
-- * 8 (bad data changes nothing more): a candidate key holding something other than
--   a schedule record ends the call with DUEQ_CORRUPT naming the key.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end

local now = now_ms()
local meta, due_key, leases_key = KEYS[1], KEYS[4], KEYS[5]
local lease_ms, token, occ_prefix = tonumber(ARGV[10]), ARGV[11], ARGV[13]
local MAX_REHAND_PROBES = 8
local finished_ttl = tonumber(ARGV[16])
local runs_prefix, worker = ARGV[18], ARGV[19]
CL.now, CL.meta, CL.due_key, CL.base_due = now, meta, due_key, due_key
CL.prefix, CL.namespace = ARGV[1], ARGV[12]
CL.backfill_prefix, CL.runs_prefix, CL.worker = ARGV[17], runs_prefix, worker
CL.targets, CL.track = false, lease_ms ~= nil
CL.outcome = 'not_leased'
if lease_ms then CL.outcome = 'leased' end

-- A lease that expired with no hand-outs left: the occurrence is finished (kept a
-- while, like an acked one, so a late ack is told it expired).
local function finish_occurrence(occ, okey, sid)
  runs_update(runs_prefix .. (sid or ''), occ, 'lease_expired')
  redis.call('HSET', okey, 'state', 'expired', 'lease_until', '', 'expired_ms', now)
  redis.call('PEXPIRE', okey, finished_ttl)
  redis.call('ZREM', leases_key, occ)
end

-- Whether an occurrence record's lease expired for the last time (h: state,
-- lease_until, attempt, s.max_attempts).
local function expired_for_good(h)
  local until_ms, max = tonumber(h[2]), tonumber(h[4]) or 0
  return h[1] == 'leased' and until_ms ~= nil and until_ms <= now and max > 0
    and (tonumber(h[3]) or 0) >= max
end

-- The overlap check (lib/claim.lua cl_overlapping): r's outstanding leased occurrence
-- is leased and not acked, its lease live or expired with hand-outs left. One expired
-- for good is finished here.
CL.live = function(r, id)
  local okey = occ_prefix .. r.outstanding
  local h = redis.call('HMGET', okey, 'state', 'lease_until', 'attempt', 's.max_attempts')
  if h[1] == 'leased' then
    if not expired_for_good(h) then return true end
    finish_occurrence(r.outstanding, okey, id)
  end
  return false
end

-- A backfilled slot whose live occurrence is leased right now is dropped.
CL.leased = function(occ)
  return redis.call('HGET', occ_prefix .. occ, 'state') == 'leased'
end

-- The earliest expired occurrence leases: ones with no hand-outs left are finished
-- (releasing a buffered slot of their schedule), by any claim; a leased claim re-hands
-- the first one that has hand-outs left. An unleased claim stops there.
local function rehand()
  for _ = 1, MAX_REHAND_PROBES do
    local first = redis.call('ZRANGEBYSCORE', leases_key, '-inf', now, 'LIMIT', 0, 1)
    if #first == 0 then return nil end
    local occ = first[1]
    local okey = occ_prefix .. occ
    local h = redis.call('HMGET', okey, 'state', 'lease_until', 'attempt', 's.max_attempts',
      'due_ms', 'skipped', 's.id', 'kind')
    local until_ms = tonumber(h[2])
    if expired_for_good(h) then
      finish_occurrence(occ, okey, h[7])
      sched_release(meta, due_key, CL.prefix, h[7], occ)
    elseif h[1] == 'leased' and until_ms and until_ms <= now and not lease_ms then
      return nil
    elseif h[1] == 'leased' and until_ms and until_ms <= now then
      local attempt = redis.call('HINCRBY', okey, 'attempt', 1)
      local deadline = now + lease_ms
      redis.call('HSET', okey, 'token', token, 'lease_until', deadline)
      runs_update(runs_prefix .. (h[7] or ''), occ, 'leased', attempt, now, worker)
      redis.call('ZADD', leases_key, deadline, occ)
      local out = { 'claimed', now, 0, tonumber(h[5]), tonumber(h[6]), '', token, deadline,
        attempt, occ, h[8] or 'scheduled' }
      local fields = redis.call('HGETALL', okey)
      for i = 1, #fields, 2 do
        if string.sub(fields[i], 1, 2) == 's.' then
          out[#out + 1] = string.sub(fields[i], 3)
          out[#out + 1] = fields[i + 1]
        end
      end
      return out
    elseif h[1] == 'leased' and until_ms then
      redis.call('ZADD', leases_key, until_ms, occ) -- stale score: the record says later
    else
      redis.call('ZREM', leases_key, occ) -- acked or dangling
    end
  end
  return nil
end

local function earliest()
  local best = nil
  for _, key in ipairs({ due_key, leases_key }) do
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if #first > 0 and (best == nil or tonumber(first[2]) < best) then best = tonumber(first[2]) end
  end
  return best or ''
end

-- Record the claim (lib/claim.lua cl_take) and, with a lease, the occurrence record;
-- returns the "claimed" reply, or nil when the slot was not taken.
local function claim(c, due_ms, new_next, new_follow, skipped, skipped_window, kind)
  kind = kind or 'scheduled'
  local occ
  occ, skipped = cl_take(c, due_ms, new_next, new_follow, skipped, skipped_window, kind)
  if occ == nil then return nil end
  local id, r = c.id, c.r
  local fields = sched_fields(id, r)
  local lease_token, deadline, attempt = '', '', ''
  if lease_ms then
    lease_token, deadline, attempt = token, now + lease_ms, 1
    local okey = occ_prefix .. occ
    local record = { 'state', 'leased', 'token', token, 'lease_until', deadline,
      'attempt', 1, 'due_ms', due_ms, 'skipped', skipped, 'claim_ms', now, 'kind', kind }
    for i = 1, #fields, 2 do
      record[#record + 1] = 's.' .. fields[i]
      record[#record + 1] = fields[i + 1]
    end
    redis.call('DEL', okey)
    redis.call('HSET', okey, unpack(record))
    redis.call('ZADD', leases_key, deadline, occ)
  end
  local out = { 'claimed', now, CL.overlap_skips, due_ms, skipped, earliest(), lease_token,
    deadline, attempt, occ, kind, SCHED_MARKER, DUEQ_SCHEMA }
  for i = 1, #fields do out[#out + 1] = fields[i] end
  return out
end

-- 0. A leased claim takes over an expired occurrence lease before anything new (and
-- any claim finishes leases that expired for good).
local rehanded = rehand()
if rehanded then
  rehanded[6] = earliest()
  return rehanded
end

-- 1. A hint from a previous "compute" answer: re-check that nothing moved.
if ARGV[4] ~= '' then
  local c = cl_hint(ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[14], ARGV[15])
  if is_error(c) then return c end
  if c then
    local out = claim(c, tonumber(ARGV[14]), tonumber(ARGV[7]), ARGV[8], tonumber(ARGV[9]) or 0,
      tonumber(ARGV[15]) or 0)
    if out then return out end
  end
end

-- 2. The earliest due candidates, in score order: the first alone, since it is
-- claimed in the common case (reading ARGV[3] of them for one claim was a fifth of
-- a claim's script time, issue 35); then, when it was not, the rest of the window,
-- each candidate examined at most once per call.
local window = tonumber(ARGV[3])
local seen = nil
local function examine(cands)
  for i = 1, #cands, 2 do
    if not (seen and seen[cands[i]]) then
      local c = cl_validate(cands[i], cands[i + 1])
      if is_error(c) then return c end
      if c then
        local due_ms, new_next, new_follow, skipped, skipped_window, kind = cl_plan(c)
        if due_ms == nil then
          return push_fields({ 'compute', now, CL.overlap_skips, earliest(), c.id,
            string.format('%d', c.r.rev), c.r.next_ms }, c.id, c.r)
        end
        local out = claim(c, due_ms, new_next, new_follow, skipped, skipped_window, kind)
        if out then return out end
      end
    end
  end
  return nil
end
local first = redis.call('ZRANGEBYSCORE', due_key, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
local out = examine(first)
if out then return out end
if #first > 0 and window > 1 then
  seen = { [first[1]] = true }
  out = examine(redis.call('ZRANGEBYSCORE', due_key, '-inf', now, 'WITHSCORES', 'LIMIT', 0,
    window - 1))
  if out then return out end
end

return { 'none', now, CL.overlap_skips, earliest() }
