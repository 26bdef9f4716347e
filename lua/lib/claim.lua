-- claim: how a due schedule's slot is taken, shared by claim_due.lua (a worker's
-- ClaimDueSchedule) and dispatch_due.lua (the service enqueueing a target schedule's
-- slots as jobs), prepended after schedule.lua. One place for the policies a slot
-- goes through: re-validation and repair of an index entry, run limit and end date,
-- catch-up (behind), overlap (overlapping, divert), triggered, backfilled and
-- buffered slots, jitter (sched_due_at), the recent runs. See claim_due.lua's header
-- for what each keeps; the two scripts differ only in what a claimed slot becomes
-- (an occurrence handed to a worker, or a job) and in which index they read.
--
-- The scripts fill CL before calling anything here:
--   now, meta, due_key (the index read: :due or the target index :due:t), base_due
--   (the due index itself, from which lib/schedule.lua finds the other), prefix
--   (schedule record prefix), namespace, backfill_prefix, runs_prefix
--   targets: true in dispatch_due (reads target schedules only), false in claim_due
--   live(r, id) -> whether r's outstanding occurrence or job is still unfinished (the
--     overlap check; may forget it by setting r.outstanding = '')
--   leased(occ) -> whether a backfilled slot's occurrence is taken already (a leased
--     occurrence record; a job with its id): the slot is dropped, not taken again
--   track: whether a claimed slot becomes r.outstanding (under SKIP and BUFFER_ONE)
--   outcome, worker: the recent-runs entry of a claimed slot
-- CL.overlap_skips counts the slots this call skipped for overlap (the metric).

local CL = { overlap_skips = 0 }

-- Per-call state (lib/job.lua job_begin says why): all of CL, which the scripts fill.
local function claim_begin()
  CL = { overlap_skips = 0 }
end

local function cl_complete(r)
  -- Only ever called on an active schedule with a next run: it leaves the index. A
  -- buffered slot still held back goes with it (counted as skipped for overlap).
  if r.buffered_ms ~= '' then
    r.buffered_ms = ''
    r.sk_overlap = r.sk_overlap + 1
    CL.overlap_skips = CL.overlap_skips + 1
  end
  r.status, r.next_ms, r.follow_ms = 'completed', '', ''
  r.trigger_ms = '' -- (a triggered occurrence not yet claimed goes too)
  count_index(CL.meta, true, false)
end

-- Moves the schedule to new_next without handing anything out (a catch-up plan that
-- skips every due slot); new_next nil means there is no later slot.
local function cl_skip_to(c, new_next, new_follow, skipped_catchup, skipped_window)
  local r, id = c.r, c.id
  if new_follow ~= 'end' then new_follow = tonumber(new_follow) or '' end
  r.sk_catchup = r.sk_catchup + skipped_catchup
  r.sk_window = r.sk_window + skipped_window
  if new_next == nil then
    cl_complete(r)
    redis.call('ZREM', CL.due_key, id)
  else
    r.next_ms, r.follow_ms = new_next, new_follow
    redis.call('ZADD', CL.due_key, sched_due_at(r), id)
  end
  sched_save(c.key, r)
end

-- Whether r (SKIP, BUFFER_ONE) has an outstanding occurrence or job (CL.live); one
-- that ended is forgotten (the caller saves r).
local function cl_overlapping(r, id)
  if r.overlap == 'allow_all' or r.outstanding == '' then return false end
  if CL.live(r, id) then return true end
  r.outstanding = ''
  return false
end

-- A slot that came due while an occurrence is outstanding: the schedule advances past
-- it as a claim would, without a run; the slot is buffered (BUFFER_ONE, empty buffer)
-- or skipped. Hands nothing out.
local function cl_divert(c, due_ms, new_next, new_follow, skipped, skipped_window)
  local r, id = c.r, c.id
  if new_follow ~= 'end' then new_follow = tonumber(new_follow) or '' end
  r.sk_catchup = r.sk_catchup + skipped
  r.sk_window = r.sk_window + (skipped_window or 0)
  if r.overlap == 'buffer_one' and r.buffered_ms == '' then
    r.buffered_ms = due_ms
  else
    r.sk_overlap = r.sk_overlap + 1
    CL.overlap_skips = CL.overlap_skips + 1
    runs_push(CL.runs_prefix .. id, occurrence_id(CL.namespace, id, due_ms, r.rev), due_ms, '',
      0, 'skipped_overlap', 'scheduled', '')
  end
  local pending = 0
  if r.buffered_ms ~= '' then pending = 1 end
  if new_next == nil or (r.limit > 0 and r.runs + pending >= r.limit) then
    -- No later slot: a buffered one keeps the schedule active until handed out.
    r.next_ms, r.follow_ms = '', ''
    if pending == 0 then r.status, r.trigger_ms = 'completed', '' end
  else
    r.next_ms, r.follow_ms = new_next, new_follow
  end
  sched_save(c.key, r)
  sched_reindex(CL.meta, CL.base_due, id, r, true)
end

-- Takes a slot: the overlap check, the counters, the run, the next run and the index
-- entry, all but what the slot becomes (the caller's). new_next nil means there is no
-- later slot. Returns the occurrence id and the skips counted, or nil when the slot was
-- not taken (held back or skipped for overlap, or a backfilled slot whose live
-- occurrence is leased: CL.leased(occ)). kind 'triggered': the record's triggered
-- occurrence (its overlap was checked when triggered).
local function cl_take(c, due_ms, new_next, new_follow, skipped, skipped_window, kind)
  local r, id = c.r, c.id
  skipped_window = skipped_window or 0
  if kind == 'scheduled' and cl_overlapping(r, id) then
    cl_divert(c, due_ms, new_next, new_follow, skipped, skipped_window)
    return nil
  end
  if new_follow ~= 'end' then new_follow = tonumber(new_follow) or '' end
  r.sk_catchup = r.sk_catchup + skipped
  r.sk_window = r.sk_window + skipped_window
  skipped = skipped + skipped_window
  local occ
  if kind == 'backfill' then
    occ = occurrence_id(CL.namespace, id, due_ms, r.rev)
    local bf = CL.backfill_prefix .. id
    redis.call('ZREM', bf, string.format('%d', due_ms))
    local rest = redis.call('ZRANGE', bf, 0, 0, 'WITHSCORES')
    r.backfill_ms = tonumber(rest[2]) or ''
    if CL.leased(occ) then
      -- Its live occurrence is taken right now: do not overwrite it.
      sched_save(c.key, r)
      sched_reindex(CL.meta, CL.base_due, id, r, true)
      return nil
    end
  elseif kind == 'triggered' then
    occ = occurrence_id(CL.namespace, id, due_ms, r.trigger_rev, 'trigger')
    r.trigger_ms = ''
  else
    if r.buffered_ms == due_ms then r.buffered_ms = '' end
    occ = occurrence_id(CL.namespace, id, due_ms, r.rev)
  end
  r.runs = r.runs + 1
  r.last_ms = CL.now
  if CL.track and r.overlap ~= 'allow_all' then r.outstanding = occ end
  runs_push(CL.runs_prefix .. id, occ, due_ms, CL.now, 1, CL.outcome, kind, CL.worker)
  if new_next == nil or (r.limit > 0 and r.runs >= r.limit) then
    cl_complete(r)
    redis.call('ZREM', CL.due_key, id)
  else
    r.next_ms, r.follow_ms = new_next, new_follow
    redis.call('ZADD', CL.due_key, sched_due_at(r), id)
  end
  sched_save(c.key, r)
  return occ, skipped
end

-- Validate one candidate; returns { key, id, r (the record) } when it is claimable now,
-- or nil after repairing its index entry. A key that holds something other than a
-- schedule record is an error reply: the claim stops there and writes nothing more.
-- A record in the other index (a target schedule met by claim_due, or one without a
-- target met by dispatch_due: an index written by an older build or by Migrate) is
-- moved to its own (sched_index_put).
local function cl_validate(id, score)
  local key = CL.prefix .. id
  local r = sched_load(key)
  if is_error(r) then return r end
  if r == nil then
    redis.call('ZREM', CL.due_key, id) -- dangling id
    return nil
  end
  if (r.target ~= '') ~= CL.targets then
    sched_index_put(CL.base_due, id, r)
    CL.moved = true
    return nil
  end
  local next_ms = sched_due_at(r)
  if next_ms == '' then
    redis.call('ZREM', CL.due_key, id) -- paused / completed / no next run
    return nil
  end
  if CL.targets and r.buffered_ms ~= '' and r.outstanding ~= '' and not cl_overlapping(r, id) then
    -- (dispatch_due: a buffered target slot whose job has finished; the record is
    -- saved by the claim that follows)
    next_ms = sched_due_at(r)
  end
  local released = r.buffered_ms ~= '' and r.outstanding == '' and next_ms == r.buffered_ms
  local other = 'triggered'
  if not released and next_ms == r.backfill_ms and next_ms ~= r.trigger_ms then
    other = 'backfill'
  end
  if released or next_ms == r.trigger_ms or next_ms == r.backfill_ms then
    -- A released buffered slot (its end and the run limit were checked when it was
    -- buffered) or a triggered occurrence: neither is a slot of the next run.
    if next_ms > CL.now then
      redis.call('ZADD', CL.due_key, next_ms, id)
      return nil
    end
    if tonumber(score) ~= next_ms then redis.call('ZADD', CL.due_key, next_ms, id) end
    if released then other = nil end
    return { key = key, id = id, r = r, buffered = released, other = other }
  end
  if (r.limit > 0 and r.runs >= r.limit) or (r.end_ms ~= '' and r.next_ms > r.end_ms) then
    cl_complete(r)
    sched_save(key, r)
    redis.call('ZREM', CL.due_key, id)
    return nil
  end
  if next_ms > CL.now then
    redis.call('ZADD', CL.due_key, next_ms, id) -- stale score: the record says later
    return nil
  end
  if tonumber(score) ~= next_ms then
    redis.call('ZADD', CL.due_key, next_ms, id)
  end
  return { key = key, id = id, r = r }
end

-- Whether a due schedule is behind under its catch-up policy, so that the caller must
-- plan its claim (see claim_due.lua's header).
local function cl_behind(r)
  if r.window_ms ~= '' and r.next_ms < CL.now - r.window_ms then return true end
  if r.catchup == 'one' then return false end
  local after = r.follow_ms
  if r.kind == 'every' and after == '' then
    after = r.next_ms + r.every_ms
    if r.end_ms ~= '' and after > r.end_ms then after = 'end' end
  end
  if after == 'end' then return false end
  return after == '' or after <= CL.now
end

-- The due time of a triggered or backfilled candidate.
local function cl_next_due(c)
  if c.other == 'triggered' then return c.r.trigger_ms end
  return c.r.backfill_ms
end

-- What to do with a valid candidate c: returns the arguments of cl_take (due ms, new
-- next, new follow, skipped, skipped for the window, kind), or nil when the caller
-- must compute its plan (a cron's next slot, or a catch-up plan: "compute").
local function cl_plan(c)
  local r = c.r
  if c.buffered or c.other then
    -- The next run stays as it is (a BUFFER_ONE schedule may have none left).
    local new_next, new_follow = r.next_ms, r.follow_ms
    if new_next == '' then new_next, new_follow = nil, '' end
    if c.buffered then return r.buffered_ms, new_next, new_follow, 0, 0, 'scheduled' end
    return cl_next_due(c), new_next, new_follow, 0, 0, c.other
  end
  if cl_behind(r) then return nil end
  -- An `every` schedule's follow_ms is set only by SetScheduleNextRun: its next run may
  -- then lie off the interval's grid, and the grid goes on at follow_ms, as a cron's.
  if r.kind == 'every' and r.follow_ms == '' then
    local new_next, skipped = every_advance(r.next_ms, r.every_ms, CL.now, r.end_ms)
    return r.next_ms, new_next, '', skipped, 0, 'scheduled'
  elseif r.follow_ms == 'end' then
    return r.next_ms, nil, '', 0, 0, 'scheduled'
  elseif r.follow_ms ~= '' and r.follow_ms > CL.now then
    return r.next_ms, r.follow_ms, '', 0, 0, 'scheduled'
  end
  return nil
end

-- A hint (a plan computed by the caller after "compute"), re-checked: applied only if
-- the schedule's revision and next run are still what the caller read. Returns the
-- valid candidate and whether the plan hands a slot out (nil when the hint is stale or
-- the schedule is not claimable; an error reply for a corrupt record). A plan that
-- only skips is applied here.
local function cl_hint(id, rev, expected_next, new_next, new_follow, skipped, hand_out,
                       skipped_window)
  local c = cl_validate(id, redis.call('ZSCORE', CL.due_key, id) or -1)
  if is_error(c) then return c end
  -- (A released buffered slot goes first: the plan is asked for again after it.)
  if c and not c.buffered and not c.other and string.format('%d', c.r.rev) == rev
      and c.r.next_ms == tonumber(expected_next) then
    if tonumber(hand_out) then return c end
    cl_skip_to(c, tonumber(new_next), new_follow, tonumber(skipped) or 0,
      tonumber(skipped_window) or 0)
  end
  return nil
end
