-- schedule: the packed schedule record and the id listing, prepended (after core.lua,
-- rules.lua and guard.lua) to every script that reads or writes schedules
-- (src/store/script.rs concatenates them).
--
-- Schema 3 (this file). Per schedule, one string key <prefix>:{<ns>}:s:<id> holds the
-- record, packed with cmsgpack as a positional array; the id is the key's last part
-- and is not repeated inside. Times other than `created` are kept as milliseconds
-- after `created` ('' when unset); status is a small integer; a whole-second interval
-- is kept as -seconds. The timing fingerprint of schema 2 is not stored: an upsert
-- compares the timing fields themselves. Schema 2 kept the same fields, by name, in a
-- hash; Migrate converts such records (sched_read accepts both).
--
-- Positions (never reorder: stored records depend on them):
--   1 timing: the cron expression (a string) or the interval (a number, see above)
--   2 tz  3 start  4 end  5 limit  6 job_name  7 payload  8 headers ('' for none)
--   9 status  10 rev  11 runs  12 created  13 updated  14 last  15 next
--   16 follow (ms, '' unknown, 'end' none: the slot after next; an `every` schedule's is
--      '' except after SetScheduleNextRun set its next run, which may lie off the grid)
--   17 policies (optional; absent while every policy field has its default, so
--      records written before it existed read as the defaults): an array of
--      1 catchup policy (1 ONE, 2 SKIP, 3 ALL)  2 catchup limit (0 none)
--      3 catchup window ms ('' none)  4 skipped for catch-up  5 skipped for the window
--      6 skipped for overlap  7 the pause note ('' none)  8 every's offset ms ('' none;
--      timing: upsert_schedule compares it too)  9 overlap policy (1 ALLOW_ALL, 2 SKIP,
--      3 BUFFER_ONE)  10 the outstanding leased occurrence's id ('' none; kept under
--      SKIP and BUFFER_ONE only)  11 the buffered slot's due ms ('' none; BUFFER_ONE)
--      12 max attempts of a leased occurrence (0 unlimited)  13 a TriggerSchedule
--      occurrence waiting for a claim: its due ms ('' none)  14 the revision it was
--      triggered under (its occurrence id keeps it)  15 the earliest slot waiting in the
--      schedule's backfill set <prefix>:{<ns>}:bf:<id> ('' none; BackfillSchedule)
--      16 jitter ms (0 none): a slot of the timing is handed out sched_jitter later
--      17 the target ('' none: workers claim the occurrences): an EnqueueTarget as
--      the JSON text src/store/records/schedule.rs `target_json` writes (issue 30;
--      dispatch_due.lua reads it with cjson)
--      (missing trailing entries read as their defaults, so a record written before
--      an entry existed reads as it did: no Migrate step)
--
-- sched_load(key) -> record table | nil (missing) | error reply (not a schema-3 record)
-- sched_read(key) -> the same, also from a schema-2 hash (Migrate only); second result
--   true when the record is still a hash
-- sched_from_flat(HGETALL of such a hash) -> record table
-- sched_save(key, record)
-- sched_fields(id, record) -> flat field/value list (all values text): what a leased
--   occurrence keeps as its copy of the schedule (claim_due.lua), unmarked
-- sched_reply(id, record) -> the same after the version marker (SCHED_MARKER,
--   DUEQ_SCHEMA): how every reply carries a record it loaded, the shape
--   src/store/records/schedule.rs decodes (it reads the marker first; a record
--   without one is an occurrence's copy, of whichever build wrote it)
-- sched_new_timing(r, kind, cron, every, tz, start, end, limit) -> whether those
--   timing fields differ from the record's (what decides fire times)
-- sched_indexed(r) -> whether the record belongs in the due index
-- push_fields(out, id, r): appends sched_reply to a reply
-- listing_of / listing_add / listing_remove / listing_page: the id listing, below
--
-- Record tables use schema 2's field names: kind, cron, every_ms, tz, start_ms, end_ms,
-- limit, job_name, payload, headers, status, rev, runs, created_ms, updated_ms,
-- last_ms, next_ms, follow_ms; numbers are Lua numbers, unset ones ''. Policies:
-- catchup ('one' | 'skip' | 'all'), catchup_limit, window_ms, sk_catchup, sk_window,
-- sk_overlap, pause_note, offset_ms, overlap ('allow_all' | 'skip' | 'buffer_one'),
-- outstanding, buffered_ms, max_attempts, trigger_ms, trigger_rev, backfill_ms, jitter_ms,
-- target
-- (nil in a table built elsewhere reads as the default). A loaded record also carries
-- its key (r.key), from which sched_jitter reads the namespace and the id.
--
-- The due index score of a record is sched_due_at(r): the earliest of a buffered slot
-- whose outstanding occurrence has ended (acked or expired for the last time), a
-- triggered occurrence, the earliest backfilled slot, and the next run plus its jitter
-- (sched_jitter). A BUFFER_ONE schedule whose last slot is buffered stays active
-- with no next run until that slot is handed out.

local SCHED_FIELDS = 16
local STATUS_CODE = { active = 1, paused = 2, completed = 3 }
local STATUS_NAME = { 'active', 'paused', 'completed' }
local CATCHUP_CODE = { one = 1, skip = 2, all = 3 }
local CATCHUP_NAME = { 'one', 'skip', 'all' }
local OVERLAP_CODE = { allow_all = 1, skip = 2, buffer_one = 3 }
local OVERLAP_NAME = { 'allow_all', 'skip', 'buffer_one' }

-- The policy fields of position 17 (x: the array, or nil for an older record).
local function sched_policies_in(r, x)
  x = x or {}
  r.catchup = CATCHUP_NAME[x[1]] or 'one'
  r.catchup_limit = tonumber(x[2]) or 0
  r.window_ms = tonumber(x[3]) or ''
  r.sk_catchup = tonumber(x[4]) or 0
  r.sk_window = tonumber(x[5]) or 0
  r.sk_overlap = tonumber(x[6]) or 0
  r.pause_note = x[7] or ''
  r.offset_ms = tonumber(x[8]) or ''
  r.overlap = OVERLAP_NAME[x[9]] or 'allow_all'
  r.outstanding = x[10] or ''
  r.buffered_ms = tonumber(x[11]) or ''
  r.max_attempts = tonumber(x[12]) or 0
  r.trigger_ms = tonumber(x[13]) or ''
  r.trigger_rev = tonumber(x[14]) or 0
  r.backfill_ms = tonumber(x[15]) or ''
  r.jitter_ms = tonumber(x[16]) or 0
  r.target = x[17] or ''
end

-- Position 17, or nil while every policy field has its default.
local function sched_policies_out(r)
  local x = { CATCHUP_CODE[r.catchup or 'one'] or 1, r.catchup_limit or 0, r.window_ms or '',
    r.sk_catchup or 0, r.sk_window or 0, r.sk_overlap or 0, r.pause_note or '',
    r.offset_ms or '', OVERLAP_CODE[r.overlap or 'allow_all'] or 1, r.outstanding or '',
    r.buffered_ms or '', r.max_attempts or 0, r.trigger_ms or '', r.trigger_rev or 0,
    r.backfill_ms or '', r.jitter_ms or 0 }
  if (r.target or '') ~= '' then
    x[17] = r.target
    return x
  end
  if x[16] == 0 then
    x[16] = nil
    if x[15] == '' then x[15] = nil end
  end
  if x[9] == 1 and x[10] == '' and x[11] == '' and x[12] == 0 and x[13] == '' and x[15] == nil then
    -- The overlap and trigger entries at their defaults: older readers see the 8 they
    -- know.
    for i = 14, 9, -1 do x[i] = nil end
    if x[1] == 1 and x[2] == 0 and x[3] == '' and x[4] == 0 and x[5] == 0 and x[6] == 0
        and x[7] == '' and x[8] == '' then
      return nil
    end
  end
  return x
end

local function sched_unpacked(key, raw)
  local ok, p = pcall(cmsgpack.unpack, raw)
  if not ok or type(p) ~= 'table' or (#p ~= SCHED_FIELDS and #p ~= SCHED_FIELDS + 1)
      or STATUS_NAME[p[9]] == nil or type(p[12]) ~= 'number'
      or (p[17] ~= nil and type(p[17]) ~= 'table') then
    return redis.error_reply('DUEQ_CORRUPT ' .. key)
  end
  local created, timing, follow = p[12], p[1], p[16]
  local r = {
    tz = p[2], start_ms = rel_in(p[3], created), end_ms = rel_in(p[4], created),
    limit = p[5], job_name = p[6], payload = p[7], headers = p[8],
    status = STATUS_NAME[p[9]], rev = p[10], runs = p[11], created_ms = created,
    updated_ms = rel_in(p[13], created), last_ms = rel_in(p[14], created),
    next_ms = rel_in(p[15], created), follow_ms = follow }
  if type(timing) == 'string' then
    r.kind, r.cron, r.every_ms = 'cron', timing, ''
  else
    r.kind, r.cron, r.every_ms = 'every', '', secs_in(timing)
  end
  if type(follow) == 'number' then r.follow_ms = created + follow end
  sched_policies_in(r, p[17])
  r.key = key
  return r
end

local function sched_load(key)
  local raw = redis.pcall('GET', key)
  if raw == false then return nil end
  if type(raw) ~= 'string' then return redis.error_reply('DUEQ_CORRUPT ' .. key) end
  return sched_unpacked(key, raw)
end

local function num_or_empty(v)
  return tonumber(v) or ''
end

-- A schema-2 hash's fields (HGETALL's flat list) as a record table (Migrate converts
-- it with sched_save).
local function sched_from_flat(flat)
  local h = {}
  for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
  local follow = h.follow_ms or ''
  if follow ~= 'end' then follow = num_or_empty(follow) end
  return {
    kind = h.kind or '', cron = h.cron or '', every_ms = num_or_empty(h.every_ms),
    tz = h.tz or '', start_ms = num_or_empty(h.start_ms), end_ms = num_or_empty(h.end_ms),
    limit = tonumber(h.limit) or 0, job_name = h.job_name or '', payload = h.payload or '',
    headers = h.headers or '', status = h.status or '', rev = tonumber(h.rev) or 1,
    runs = tonumber(h.runs) or 0, created_ms = num_or_empty(h.created_ms),
    updated_ms = num_or_empty(h.updated_ms), last_ms = num_or_empty(h.last_ms),
    next_ms = num_or_empty(h.next_ms), follow_ms = follow,
    catchup = 'one', catchup_limit = 0, window_ms = '', sk_catchup = 0, sk_window = 0,
    sk_overlap = 0, pause_note = '', offset_ms = '', overlap = 'allow_all', outstanding = '',
    buffered_ms = '', max_attempts = 0, trigger_ms = '', trigger_rev = 0, backfill_ms = '',
    jitter_ms = 0, target = '' }
end

local function sched_read(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'hash' then
    local r = sched_from_flat(redis.call('HGETALL', key))
    r.key = key
    return r, true
  end
  if kind == 'none' then return nil, false end
  return sched_load(key), false
end

local function sched_save(key, r)
  local created = r.created_ms
  local timing = r.cron
  if r.kind == 'every' then timing = secs_out(r.every_ms) end
  local headers = r.headers
  if headers == '{}' then headers = '' end
  local follow = r.follow_ms
  if type(follow) == 'number' then follow = follow - created end
  local p = { timing, r.tz, rel_out(r.start_ms, created),
    rel_out(r.end_ms, created), r.limit, r.job_name, r.payload, headers,
    STATUS_CODE[r.status], r.rev, r.runs, created, rel_out(r.updated_ms, created),
    rel_out(r.last_ms, created), rel_out(r.next_ms, created), follow }
  p[17] = sched_policies_out(r)
  redis.call('SET', key, cmsgpack.pack(p))
end

local function sched_fields(id, r)
  return { 'id', id, 'kind', r.kind, 'cron', r.cron, 'every_ms', int_text(r.every_ms),
    'tz', r.tz, 'start_ms', int_text(r.start_ms), 'end_ms', int_text(r.end_ms),
    'limit', int_text(r.limit), 'job_name', r.job_name, 'payload', r.payload,
    'headers', r.headers, 'status', r.status, 'rev', int_text(r.rev), 'runs', int_text(r.runs),
    'created_ms', int_text(r.created_ms), 'updated_ms', int_text(r.updated_ms),
    'last_ms', int_text(r.last_ms), 'next_ms', int_text(r.next_ms),
    'follow_ms', int_text(r.follow_ms), 'catchup', r.catchup or 'one',
    'catchup_limit', int_text(r.catchup_limit or 0), 'window_ms', int_text(r.window_ms or ''),
    'sk_catchup', int_text(r.sk_catchup or 0), 'sk_window', int_text(r.sk_window or 0),
    'sk_overlap', int_text(r.sk_overlap or 0), 'pause_note', r.pause_note or '',
    'offset_ms', int_text(r.offset_ms or ''), 'overlap', r.overlap or 'allow_all',
    'max_attempts', int_text(r.max_attempts or 0), 'buffered_ms', int_text(r.buffered_ms or ''),
    'trigger_ms', int_text(r.trigger_ms or ''), 'backfill_ms', int_text(r.backfill_ms or ''),
    'jitter_ms', int_text(r.jitter_ms or 0), 'target', r.target or '' }
end

local SCHED_MARKER = 'schema'

local function sched_reply(id, r)
  local out = { SCHED_MARKER, DUEQ_SCHEMA }
  local fields = sched_fields(id, r)
  for i = 1, #fields do out[i + 2] = fields[i] end
  return out
end

local function push_fields(out, id, r)
  out[#out + 1], out[#out + 2] = SCHED_MARKER, DUEQ_SCHEMA
  local fields = sched_fields(id, r)
  for i = 1, #fields do out[#out + 1] = fields[i] end
  return out
end

local function sched_new_timing(r, kind, cron, every, tz, start_ms, end_ms, limit)
  return r.kind ~= kind or r.cron ~= cron or r.every_ms ~= every or r.tz ~= tz
    or r.start_ms ~= start_ms or r.end_ms ~= end_ms or r.limit ~= limit
end

-- The record's due index score ('' = not indexed): a released buffered slot (its
-- outstanding occurrence ended) before the next run; nothing unless active.
-- How much later than its nominal time the next run is handed out: 48 bits of its
-- occurrence id (hex digits 1-8 and 10-13) modulo jitter_ms, so every replica agrees
-- and domain::jitter_offset_ms (Rust, for Occurrence.jittered_time) gives the same.
-- The namespace and the id come from the record's key <prefix>:{<ns>}:s:<id> (neither
-- the prefix nor the namespace may hold braces).
-- How long a target schedule's buffered slot waits before dispatch_due looks at its
-- previous job again (see sched_due_at).
local TARGET_RECHECK_MS = 1000

local function sched_jitter(r)
  local jitter = r.jitter_ms or 0
  if jitter <= 0 or r.next_ms == '' or r.key == nil then return 0 end
  local ns, id = string.match(r.key, '^[^{]*{([^}]*)}:s:(.*)$')
  if ns == nil then return 0 end
  local occ = occurrence_id(ns, id, r.next_ms, r.rev)
  return tonumber(string.sub(occ, 1, 8) .. string.sub(occ, 10, 13), 16) % jitter
end

local function sched_due_at(r)
  if r.status ~= 'active' then return '' end
  local at = r.next_ms
  if at ~= '' then at = at + sched_jitter(r) end
  local trigger = r.trigger_ms or ''
  if trigger ~= '' and (at == '' or trigger < at) then at = trigger end
  local backfill = r.backfill_ms or ''
  if backfill ~= '' and (at == '' or backfill < at) then at = backfill end
  if (r.buffered_ms or '') ~= '' and (r.outstanding or '') == ''
      and (at == '' or r.buffered_ms < at) then
    at = r.buffered_ms
  end
  if (r.target or '') ~= '' and (r.buffered_ms or '') ~= '' and (r.outstanding or '') ~= '' then
    -- A target schedule's buffered slot waits for a job, and no job script tells the
    -- schedule when it finishes: dispatch_due looks again after TARGET_RECHECK_MS.
    local again = now_ms() + TARGET_RECHECK_MS
    if at == '' or again < at then at = again end
  end
  return at
end

-- Whether the record is in the due index (see sched_due_at).
local function sched_indexed(r)
  return r ~= nil and sched_due_at(r) ~= ''
end

-- The index a record belongs in: target schedules (r.target set) are dispatched by
-- the service from their own index, <due index>:t (src/store/keys.rs `target_due`),
-- which ClaimDueSchedule never reads; the others stay in the due index.
local function sched_target_index(due_key)
  return due_key .. ':t'
end

-- Writes the record's entry in the index it belongs in (sched_due_at; none when it
-- is not indexed) and drops any entry in the other one. due_key: the due index.
local function sched_index_put(due_key, id, r)
  local home, other = due_key, sched_target_index(due_key)
  if (r.target or '') ~= '' then home, other = other, home end
  local at = sched_due_at(r)
  if at == '' then
    redis.call('ZREM', home, id)
  else
    redis.call('ZADD', home, at, id)
  end
  redis.call('ZREM', other, id)
  return at
end

-- Puts the record's index entry where sched_due_at says, in the index it belongs in
-- (sched_index_put; due_key: the due index), keeping meta `indexed` (was: whether it
-- was indexed before the change; `indexed` counts both indexes).
local function sched_reindex(meta, due_key, id, r, was)
  local at = sched_index_put(due_key, id, r)
  count_index(meta, was, at ~= '')
end

-- An outstanding occurrence ended (acked, or its lease expired for the last time):
-- the schedule that tracks it (SKIP, BUFFER_ONE) stops tracking it, and a buffered
-- slot becomes due. No-op when the schedule is gone or tracks another occurrence.
-- Returns true when a buffered slot was released.
local function sched_release(meta, due_key, prefix, id, occ)
  if id == nil or id == '' then return false end
  local key = prefix .. id
  local r = sched_load(key)
  if r == nil or is_error(r) or r.outstanding ~= occ then return false end
  local was = sched_indexed(r)
  r.outstanding = ''
  sched_save(key, r)
  sched_reindex(meta, due_key, id, r, was)
  return r.buffered_ms ~= '' and r.status == 'active'
end

-- What Migrate's decision about a record was made from (migrate_scan, migrate_apply):
-- the revision alone is not enough, because claims, pause and resume change status
-- and next run without bumping it.
local function migrate_state(r)
  return int_text(r.rev) .. '|' .. r.status .. '|' .. int_text(r.next_ms) .. '|' .. int_text(r.runs)
end

-- The id listing (schema 3): ids in lex order, split over small sorted sets so that
-- each stays in Redis's compact listpack encoding (~13 B per id, where one big
-- sorted set costs ~96):
--   L.top                  zset, all scores 0: the leaves' boundaries, lex order
--   L.leaf .. <boundary>   zset, all scores 0: the ids >= boundary and < the next
--                          boundary, at most LEAF_MAX of them
-- A leaf is split in two when it outgrows LEAF_MAX and dropped when it empties; the
-- first leaf is renamed when an id lower than every boundary arrives. Scripts are
-- handed the top key (KEYS) and the leaf prefix (ARGV) by src/store/keys.rs and build
-- L with listing_of; meta `listed` counts the ids listed.
local LEAF_MAX = 120

local function listing_of(top, leaf_prefix, meta)
  return { top = top, leaf = leaf_prefix, meta = meta }
end

-- The boundary of the leaf id belongs in (nil when id is below every boundary).
local function leaf_of(L, id)
  return redis.call('ZREVRANGEBYLEX', L.top, '[' .. id, '-', 'LIMIT', 0, 1)[1]
end

-- Splits a leaf that outgrew LEAF_MAX: its upper half becomes a leaf of its own.
local function split_leaf(L, leaf, n)
  local upper = redis.call('ZRANGE', leaf, math.floor(n / 2), -1)
  local args = {}
  for i = 1, #upper do
    args[#args + 1] = 0
    args[#args + 1] = upper[i]
  end
  redis.call('ZADD', L.leaf .. upper[1], unpack(args))
  redis.call('ZREMRANGEBYRANK', leaf, math.floor(n / 2), -1)
  redis.call('ZADD', L.top, 0, upper[1])
end

-- Lists id (a no-op when it is listed); returns 1 when it was not.
local function listing_add(L, id)
  local b = leaf_of(L, id)
  if b == nil then
    local first = redis.call('ZRANGE', L.top, 0, 0)[1]
    if first ~= nil then
      -- A new lowest id: the first leaf's boundary moves down to it (a boundary
      -- whose leaf is gone, deleted by hand, is simply dropped).
      if redis.call('EXISTS', L.leaf .. first) == 1 then
        redis.call('RENAME', L.leaf .. first, L.leaf .. id)
      end
      redis.call('ZREM', L.top, first)
    end
    redis.call('ZADD', L.top, 0, id)
    b = id
  end
  local leaf = L.leaf .. b
  if redis.call('ZADD', leaf, 0, id) == 0 then return 0 end
  redis.call('HINCRBY', L.meta, 'listed', 1)
  local n = redis.call('ZCARD', leaf)
  if n > LEAF_MAX then split_leaf(L, leaf, n) end
  return 1
end

-- Unlists id; returns 1 when it was listed.
local function listing_remove(L, id)
  local b = leaf_of(L, id)
  if b == nil then return 0 end
  local leaf = L.leaf .. b
  if redis.call('ZREM', leaf, id) == 0 then return 0 end
  redis.call('HINCRBY', L.meta, 'listed', -1)
  if redis.call('EXISTS', leaf) == 0 then redis.call('ZREM', L.top, b) end
  return 1
end

-- Up to `count` listed ids after `after` ('' = from the first), in lex order. Empty
-- leaves never stay, so each leaf visited past the first yields at least one id; a
-- listing damaged by hand (leaves deleted) is still read in at most count + 2 leaf
-- visits per call.
local function listing_page(L, after, count)
  local out = {}
  local b
  if after ~= '' then b = leaf_of(L, after) end
  if b == nil then b = redis.call('ZRANGE', L.top, 0, 0)[1] end
  local from = '-'
  if after ~= '' then from = '(' .. after end
  local visits = 0
  while b ~= nil and #out < count and visits < count + 2 do
    visits = visits + 1
    local ids = redis.call('ZRANGEBYLEX', L.leaf .. b, from, '+', 'LIMIT', 0, count - #out)
    for i = 1, #ids do out[#out + 1] = ids[i] end
    if #out < count then
      b = redis.call('ZRANGEBYLEX', L.top, '(' .. b, '+', 'LIMIT', 0, 1)[1]
    end
  end
  return out
end

-- Recent runs (GetSchedule): per schedule a list <prefix>:{<ns>}:rr:<id> of at most
-- RUNS_KEPT entries, newest first, each "occurrence id|due ms|claim ms|attempt|outcome|
-- kind|worker" (the worker last: it is free text). Outcomes: leased, not_leased, acked,
-- lease_expired, skipped_overlap, enqueued (a target schedule's slot became a job). Pushing trims it (O(1)); an update scans the kept
-- entries (O(RUNS_KEPT)).
local RUNS_KEPT = 10

local function runs_push(key, occ, due, claim, attempt, outcome, kind, worker)
  redis.call('LPUSH', key, table.concat({ occ, int_text(due), int_text(claim), int_text(attempt),
    outcome, kind, worker }, '|'))
  redis.call('LTRIM', key, 0, RUNS_KEPT - 1)
end

-- Rewrites the entry of occ, if still kept: its outcome, and its attempt, claim time
-- and worker when given (a re-hand).
local function runs_update(key, occ, outcome, attempt, claim, worker)
  if occ == nil or occ == '' then return end
  local items = redis.call('LRANGE', key, 0, RUNS_KEPT - 1)
  for i, item in ipairs(items) do
    local o, due, c, a, _, kind, w = string.match(item,
      '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
    if o == occ then
      redis.call('LSET', key, i - 1, table.concat({ o, due, claim and int_text(claim) or c,
        attempt and int_text(attempt) or a, outcome, kind, worker or w }, '|'))
      return
    end
  end
end
