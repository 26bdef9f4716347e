-- job: prelude prepended (after core.lua) to every job script (src/store/script.rs
-- concatenates them): the job layout guard, the packed job record, and the ready
-- lists and listing buckets that index it.
--
-- Layout 2 (this file). Per job, one string key holds the record, packed with
-- cmsgpack as a positional array (positions below); the job id is the key's last part
-- and is not repeated inside. Times other than `created` are kept as milliseconds
-- after `created` ('' when unset), so a fresh job's times cost a byte each; state
-- and backoff kind are small integers; whole-second durations are kept in seconds;
-- empty trailing fields are left off. A string
-- is stored the same way whatever Redis's hash-max-listpack-* settings are, so a
-- large payload never flips the record into a bigger encoding.
-- A lease change (claim, extend, ack) rewrites the whole record: a lease part of
-- its own, written alone, was measured to save 3-4% of a fast-path job's Redis
-- time, not worth a layout 3 and its Migrate (docs/performance.md, "Why a lease
-- change writes the whole record"; tools/profile/record_write.sh).
--   ready:    list  K.ready .. <priority>:<queue>  job numbers n (see listing), FIFO
--             (pushed at the tail; a job coming back from a lease or a retry goes to
--             the head); a number is a few bytes where an id is tens
--             zset  K.prio .. <queue>              priority -> -priority, one member per
--             ready list that may exist (a member whose list is gone is dropped when met)
--   listing:  hash  K.listing .. <n div 64>:<queue> field n mod 64 -> job id, where n
--             is the job's number within its queue (meta field `n:<queue>`), so a
--             queue's jobs are listed in enqueue order, 64 to a bucket
-- K is the table job_keys(ARGV, 1) reads from the eight key prefixes every job script
-- takes first (src/store/keys.rs JobPrefixes, in this order): job record, payload,
-- ready list, ready priorities, delayed, leased, listing bucket, dedup. ready_list and
-- listing_bucket are the only places a key is composed of two variable parts; a
-- library test pins both to keys.rs.
--
-- jobs_guard(meta[, probe]) -> nil, recorded layout (nil when none) when the namespace's jobs
--   use layout 2 (meta `jobs`) or it never held jobs; else an error reply "DUEQ_MIGRATE_JOBS <found> <meta key>" the
--   service turns into FAILED_PRECONDITION with the Migrate command. Layout 1 (one
--   hash per job, sorted-set ready and listing indexes) is recognised by the
--   `job_seq` counter it kept in meta; found "unknown" when meta lost `jobs` while
--   jobs are stored (deleted by hand, evicted, a partial restore): the layout's copy
--   in the jobs marker (jobs_marker(meta), keys.rs `jobs_marker`) is still there,
--   or, the marker lost with it, one of the keys `probe()` names exists: the data
--   itself (held_probe below; issue 29).
--   Serving such a namespace would restart its job counters over existing jobs
--   (invariant 1: no script re-creates metadata over existing data). The marker is
--   read only when meta lacks `jobs`, so the hot path pays nothing for it (nor for
--   the probe, a function called only then: one EXISTS of its keys and the marker).
-- job_load(key) -> record table | nil (missing) | error reply (not a layout-2 record)
-- job_save(key, record[, fresh]) -> the packed record it stored (fresh: just created)
-- push_job(out, K, id, packed, px): appends a job to a reply the one way every job
--   script replies with one: its id, its packed record (as stored, or packed_of an
--   array), and its payload when kept in its own key (px = 1; else ''). Rust decodes
--   only that (src/store/packed_job.rs reads the positions P_* below).
-- set_payload / payload_of / drop_payload: a payload over INLINE_PAYLOAD bytes lives
--   in K.payload .. id instead of the record
-- listing_ids(K, queue, ns) -> the ids of many job numbers, a bucket at a time, and
--   the numbers
-- packed_bytes(K, id, p, full, errors, checkpoint) -> about how many bytes the record
--   takes in a reply
-- lease_check(r, token, now) -> nil when token is the current lease of the active job
--   r and that lease has not expired, else the refusal to return: { "stale", state }
--   or { "expired" } (invariant 4: the lease is the only authority); the rule itself
--   is lease_refusal(state, held token, lease_until, token, now), which the packed
--   ack path applies to the array
-- job_at(K, id) -> key, record | nil, the reply to return ({ "missing" }, or the
--   record's DUEQ_CORRUPT error)
-- leased_job(K, id, token, now) -> the same, also refusing a lease that does not count
-- complete_job(K, meta, done, id, token, now[, batch[, result]]) -> AckJob's transition
--   (below); with a batch (completions_new), its index writes wait for
--   completions_flush; a non-empty result is kept with the completed job (issue 30)
--
-- Invariant 5 (docs/DESIGN.md) (migration explicit, never silent): job scripts refuse a namespace
-- whose jobs are in another layout instead of reading them as missing.

local JOBS_LAYOUT = '2'
local LISTING_BUCKET = 64

-- The key that keeps a copy of the job layout beside meta: written with the
-- namespace's first jobs, it outlives a lost meta.
local function jobs_marker(meta)
  return meta .. ':jobs'
end

-- Whether this namespace's queue counts are kept (meta `counts` = '1'); read by
-- jobs_guard with the layout, in the same call.
local COUNTS_KEPT = false

-- Per-call state is reset by a <file>_begin() beside it: the service loads these
-- files once as a Redis function library (src/store/library.rs), where what a call
-- leaves in a file-level variable would otherwise be seen by the next call. The
-- library calls each file's begin before every function; a library test finds every
-- write to file-level state and holds it to a begin.
local function job_begin()
  COUNTS_KEPT = false
end

local function jobs_guard(meta, probe)
  local got = redis.call('HMGET', meta, 'jobs', 'counts')
  local found = got[1]
  COUNTS_KEPT = got[2] == '1'
  if found == JOBS_LAYOUT then return nil, found end
  if not found then
    if redis.call('HEXISTS', meta, 'job_seq') == 1 then
      found = '1'
    elseif redis.call('EXISTS', jobs_marker(meta), unpack(probe and probe() or {})) > 0 then
      found = 'unknown'
    else
      return nil, nil
    end
  end
  return redis.error_reply('DUEQ_MIGRATE_JOBS ' .. found)
end

-- Positions of the packed array (never reorder: stored records depend on them):
--   1 queue  2 name  3 payload  4 priority  5 gseq  6 n  7 state  8 attempts
--   9 max_attempts  10 backoff  11 base  12 cap  13 jitter  14 lease_ms  15 created
--   16 run_at  17 updated | 18 worker  19 token  20 finished  21 lease_until
--   22 headers  23 dedup  24 errors  25 px  26 version  27 cancel  28 watch
--   29 fraction  30 message  31 progress_at  32 checkpoint  33 result  34 schedule
--   35 due  36 run  37 retain  38 fkey  39 ckey  40 rkey  41 cost  42 dag  43 ref
--   44 odf
-- Issue 34 added 42-44 (the flow the job is a node of, its ref there, and what it
-- does when a dependency fails: '' cancel, 'r' run, 's' skip: lib/graph.lua), past the
-- old end in the same way, with two states: waiting (7) and skipped (8).
-- Issue 32 added 38-41 (the job's fairness, concurrency and rate keys and its cost
-- against rate limits, '' for 1: lib/flow.lua), past the old end in the same way.
-- Issue 36 added 37 (retain: the job's own retention rule, lib/job.lua
-- `retention.finish`; empty for a job that keeps the server default), past the old end in
-- the same way. Issue 30 added 26-36, past the old end, so a record written before them is a
-- record of this layout with those positions empty (no Migrate step): version
-- counts the record's writes (empty = 1: a job as created, or a record written before
-- versions; each later write through packed_save adds one), cancel is 1 once CancelJob asked the worker of an active job to
-- stop, watch is when a WatchJob's interest in it ends (epoch ms; a write before
-- then is announced), fraction/message/progress_at/checkpoint are the worker's last
-- progress report (progress_at relative to created), result is what AckJob
-- returned, and schedule/due/run (due in epoch ms) name the schedule slot that
-- enqueued it.
-- Fields after REQUIRED are left off the end while they are empty (a fresh job
-- stores none of them), most often set first. load and save below spell the
-- positions out rather than loop over a name list: every job script runs them,
-- and the unrolled form is the cheaper one in Redis's Lua.
local REQUIRED, FIELDS = 17, 44
local STATE_CODE = { pending = 1, delayed = 2, active = 3, completed = 4, dead = 5,
  cancelled = 6, waiting = 7, skipped = 8 }
local STATE_NAME = { 'pending', 'delayed', 'active', 'completed', 'dead', 'cancelled', 'waiting', 'skipped' }

-- The packed array itself, for the transitions every job takes (claim, ack; issue
-- 15), which change a few positions and skip job_load/job_save's named table:
-- packed_load(key) -> array | nil (missing) | error reply, as job_load checks it; and
--   the stored bytes;
-- packed_put(p, pos, v) sets a position, filling the empty ones before it;
-- packed_of(p) -> the array packed, its empty positions past REQUIRED trimmed;
-- packed_save(key, p[, fresh]) -> the packed record it stored (packed_of), as job_save
--   stores; counts the write in version unless `fresh` (a record just created).
-- Every position is named here as src/store/packed_job.rs `pos` names it (a library
-- test holds the two equal); job_load and job_save spell the numbers out (above).
local P_QUEUE, P_NAME, P_PAYLOAD, P_PRIORITY, P_GSEQ, P_N, P_STATE = 1, 2, 3, 4, 5, 6, 7
local P_ATTEMPTS, P_MAX_ATTEMPTS, P_BACKOFF, P_BASE, P_CAP, P_JITTER = 8, 9, 10, 11, 12, 13
local P_LEASE_MS, P_CREATED, P_RUN_AT, P_UPDATED, P_WORKER, P_TOKEN = 14, 15, 16, 17, 18, 19
local P_FINISHED, P_LEASE_UNTIL, P_HEADERS, P_DEDUP, P_ERRORS, P_PX = 20, 21, 22, 23, 24, 25
local P_VERSION, P_CANCEL, P_WATCH, P_FRACTION, P_MESSAGE, P_PROGRESS_AT = 26, 27, 28, 29, 30, 31
local P_CHECKPOINT, P_RESULT, P_SCHEDULE, P_DUE, P_RUN, P_RETAIN = 32, 33, 34, 35, 36, 37
local P_FKEY, P_CKEY, P_RKEY, P_COST, P_DAG, P_REF, P_ODF = 38, 39, 40, 41, 42, 43, 44

-- A record is a msgpack array of REQUIRED..FIELDS items, so it always opens with the
-- 3-byte array16 header (0xdc, then the count), and its items follow as plain
-- msgpack values one after another. Unpacking those values (the record past its
-- header) puts them on the Lua stack, and the table is built at its final size;
-- unpacking the array instead grows a fresh table one rehash at a time (issue 15;
-- tools/profile/claim_ack.sh counts it). Anything
-- else stored there (a record written as a map) is unpacked whole, as before. The
-- count must match: a record with an item missing or bytes left over is corrupt.
local ARRAY16 = 0xdc

local function items_of(raw)
  -- From byte offset 3 (past the header), at most FIELDS values; the first result is
  -- where decoding stopped, dropped by select.
  return { select(2, cmsgpack.unpack_limit(raw, FIELDS, 3)) }
end

local function packed_load(key)
  local raw = redis.pcall('GET', key)
  if raw == false then return nil end
  local ok, p, count = false, nil, nil
  if type(raw) == 'string' then
    local tag, hi, lo = string.byte(raw, 1, 3)
    if tag == ARRAY16 and lo then
      count = hi * 256 + lo
      ok, p = pcall(items_of, raw)
    else
      ok, p = pcall(cmsgpack.unpack, raw)
    end
  end
  if not ok or type(p) ~= 'table' or #p < REQUIRED or #p > FIELDS
      or (count and #p ~= count) or STATE_NAME[p[7]] == nil then
    return redis.error_reply('DUEQ_CORRUPT ' .. key)
  end
  return p, raw
end

local function packed_put(p, pos, v)
  for i = #p + 1, pos - 1 do p[i] = '' end
  p[pos] = v
end

local function packed_of(p)
  local last = FIELDS
  while last > REQUIRED and (p[last] == '' or p[last] == nil) do
    p[last] = nil
    last = last - 1
  end
  return cmsgpack.pack(p)
end

-- Job changes (issue 30). A write of a watched record is announced: PUBLISH on the
-- namespace's changes channel (keys.rs `job_changes`) of "<version> <token> <id>".
-- WatchJob marks its interest in the record (position watch: epoch ms until which
-- writes are announced; lua/watch_job.lua sets it without counting a write), so an
-- unwatched record costs packed_save one emptiness check and no TIME; a lapsed
-- mark is cleared by the next write. A save of an active job whose cancel was asked
-- is announced too, with its lease token, so the Work stream holding that lease
-- learns of it; token is empty otherwise. A watched record deleted (pruned, purged)
-- is announced with version 0: announce_gone(key, watch).
-- changes_of(key) -> the channel and the job id of a job record's key: the channel
-- is composed from the key (its hash tag ends at the first '}', which neither a
-- prefix nor a namespace may hold), and a library test pins it to keys.rs.
local function changes_of(key)
  local tag_end = string.find(key, '}:j:', 1, true)
  return string.sub(key, 1, tag_end + 1) .. 'jc', string.sub(key, tag_end + 4)
end

local function announce(key, version, token)
  local channel, id = changes_of(key)
  redis.call('PUBLISH', channel, string.format('%d', version) .. ' ' .. token .. ' ' .. id)
end

local function announce_gone(key, watch)
  if watch ~= nil and watch ~= '' and tonumber(watch) > now_ms() then announce(key, 0, '') end
end

local function packed_save(key, p, fresh)
  -- A new record stores no version (empty reads as 1): positions 18-26 stay off the
  -- end of a fresh job's record, nine bytes that can move it up an allocator size.
  local version = 1
  if not fresh then
    version = (tonumber(p[P_VERSION]) or 1) + 1
    packed_put(p, P_VERSION, version)
  end
  local token, watch = nil, p[P_WATCH]
  if watch ~= nil and watch ~= '' then
    if tonumber(watch) > now_ms() then token = '' else p[P_WATCH] = '' end
  end
  if p[P_CANCEL] == 1 and p[P_STATE] == STATE_CODE.active then token = p[P_TOKEN] or '' end
  local packed = packed_of(p)
  redis.call('SET', key, packed)
  if token then announce(key, version, token) end
  return packed
end

local function job_load(key)
  local p = packed_load(key)
  if p == nil or is_error(p) then return p end
  local created, jitter = p[15], p[13]
  -- Jitter is kept in thousandths when that is exact (a byte or three), else as text.
  if type(jitter) == 'number' then jitter = tostring(jitter / 1000) end
  return {
    queue = p[1], name = p[2], payload = p[3], priority = p[4], gseq = p[5], n = p[6],
    state = STATE_NAME[p[7]], attempts = p[8], max_attempts = p[9],
    backoff = (p[10] == 1) and 'f' or 'e', base = secs_in(p[11]),
    cap = secs_in(p[12]), jitter = jitter, lease_ms = secs_in(p[14]),
    created = created, run_at = rel_in(p[16], created), updated = rel_in(p[17], created),
    worker = p[18] or '', token = p[19] or '', finished = rel_in(p[20], created),
    lease_until = rel_in(p[21], created), headers = p[22] or '', dedup = p[23] or '',
    errors = p[24] or '', px = p[25] or '', version = p[26] or '', cancel = p[27] or '',
    watch = p[28] or '', fraction = p[29] or '', message = p[30] or '',
    progress_at = rel_in(p[31], created), checkpoint = p[32] or '', result = p[33] or '',
    schedule = p[34] or '', due = p[35] or '', run = p[36] or '', retain = p[37] or '',
    fkey = p[38] or '', ckey = p[39] or '', rkey = p[40] or '', cost = p[41] or '',
    dag = p[42] or '', ref = p[43] or '', odf = p[44] or '' }
end

local function job_save(key, r, fresh)
  local created = r.created
  local jitter = (tonumber(r.jitter) or 0) * 1000
  if jitter ~= math.floor(jitter) then jitter = r.jitter end
  local p = { r.queue, r.name, r.payload, r.priority, r.gseq, r.n, STATE_CODE[r.state],
    r.attempts, r.max_attempts, (r.backoff == 'f') and 1 or 0, secs_out(r.base),
    secs_out(r.cap), jitter, secs_out(r.lease_ms), created,
    rel_out(r.run_at, created), rel_out(r.updated, created),
    r.worker, r.token, rel_out(r.finished, created), rel_out(r.lease_until, created),
    r.headers, r.dedup, r.errors, r.px, r.version or '', r.cancel or '', r.watch or '',
    r.fraction or '', r.message or '', rel_out(r.progress_at, created),
    r.checkpoint or '', r.result or '', r.schedule or '', r.due or '', r.run or '',
    r.retain or '', r.fkey or '', r.ckey or '', r.rkey or '', r.cost or '',
    r.dag or '', r.ref or '', r.odf or '' }
  return packed_save(key, p, fresh)
end

-- Payloads up to this size live in the record; a larger one gets a key of its own
-- (record field px = 1), so the transitions, which rewrite the record, never copy
-- it, and the extra key's ~100 B are under a tenth of what it holds.
local INLINE_PAYLOAD = 1024

local function set_payload(K, id, r, payload)
  if #payload > INLINE_PAYLOAD then
    redis.call('SET', K.payload .. id, payload)
    r.payload, r.px = '', 1
  else
    if r.px == 1 then redis.call('DEL', K.payload .. id) end
    r.payload, r.px = payload, ''
  end
end

local function payload_of(K, id, r)
  if r.px == 1 then return redis.call('GET', K.payload .. id) or '' end
  return r.payload
end

local function drop_payload(K, id, r)
  if r.px == 1 then redis.call('DEL', K.payload .. id) end
end

local function push_job(out, K, id, packed, px)
  out[#out + 1], out[#out + 2] = id, packed
  out[#out + 1] = px == 1 and (redis.call('GET', K.payload .. id) or '') or ''
end

-- Bytes a record's fields take in a reply, read without loading a separate payload
-- (STRLEN): the variable-length fields plus REPLY_FIXED for the fixed-size ones and
-- the protobuf framing. `full` counts the payload, headers and result (left out of a
-- basic listing); `errors` counts the error history (a claim's reply has none);
-- `checkpoint` the last checkpoint (a claim hands it to the next attempt). Invariant
-- 9: a claim or a page stops adding records before its reply outgrows the budget the
-- caller passes.
local REPLY_FIXED = 256

-- A payload's length, read with STRLEN when it lives in its own key (px = 1).
local function payload_bytes(K, id, px, payload)
  if px == 1 then return redis.call('STRLEN', K.payload .. id) end
  return #payload
end

local function packed_bytes(K, id, p, full, errors, checkpoint)
  local n = REPLY_FIXED + #id + #p[P_QUEUE] + #p[P_NAME] + #(p[P_DEDUP] or '')
    + #(p[P_WORKER] or '') + #(p[P_TOKEN] or '')
  if errors then n = n + #(p[P_ERRORS] or '') end
  if full then
    n = n + #(p[P_HEADERS] or '') + payload_bytes(K, id, p[P_PX], p[P_PAYLOAD])
  end
  -- Issue 30's variable-length positions lie past P_CANCEL: a record that holds
  -- none of them (most, on the claim path) pays one length check.
  if #p > P_CANCEL then
    n = n + #(p[P_MESSAGE] or '') + #(p[P_SCHEDULE] or '')
    if full then n = n + #(p[P_RESULT] or '') end
    if checkpoint then n = n + #(p[P_CHECKPOINT] or '') end
  end
  return n
end

local function job_keys(argv, first)
  return { job = argv[first], payload = argv[first + 1], ready = argv[first + 2],
    prio = argv[first + 3], delayed = argv[first + 4], leased = argv[first + 5],
    listing = argv[first + 6], dedup = argv[first + 7] }
end

local function ready_list(K, queue, priority)
  return K.ready .. string.format('%d', priority) .. ':' .. queue
end

-- Makes job number n of the queue claimable: at the tail of its priority's list, or at
-- the head for a job coming back (expired lease, retry), which is older than
-- everything behind it.
local function ready_push(K, queue, priority, n, at_head)
  local list = ready_list(K, queue, priority)
  local entry = string.format('%d', n)
  local len
  if at_head then
    len = redis.call('LPUSH', list, entry)
  else
    len = redis.call('RPUSH', list, entry)
  end
  -- A list that existed is already registered (a member is only dropped once its
  -- list is gone), so only a new list costs the ZADD.
  if len == 1 then
    redis.call('ZADD', K.prio .. queue, -priority, string.format('%d', priority))
  end
end

local function listing_bucket(K, queue, n)
  return K.listing .. string.format('%d', math.floor(n / LISTING_BUCKET)) .. ':' .. queue
end

local function listing_add(K, queue, n, id)
  redis.call('HSET', listing_bucket(K, queue, n), n % LISTING_BUCKET, id)
end

-- The id of job number n of the queue, or nil once it is pruned.
local function listing_id(K, queue, n)
  return redis.call('HGET', listing_bucket(K, queue, n), n % LISTING_BUCKET)
end

-- The ids of job numbers ns (text, as a ready list holds them) of the queue, in
-- order (false once pruned): one HMGET per run of numbers in the same bucket. Also
-- returns the numbers themselves, each read from its text once.
local function listing_ids(K, queue, ns)
  local ids, nums, count = {}, {}, #ns
  for k = 1, count do nums[k] = tonumber(ns[k]) end
  local i = 1
  while i <= count do
    local first = nums[i]
    local bucket = math.floor(first / LISTING_BUCKET)
    local fields, j = {}, i
    while j <= count do
      local n = nums[j]
      if math.floor(n / LISTING_BUCKET) ~= bucket then break end
      -- As text: Redis's Lua turns a number argument into text with '%.14g', the
      -- costliest way there is, once per job.
      fields[#fields + 1] = string.format('%d', n % LISTING_BUCKET)
      j = j + 1
    end
    local got = redis.call('HMGET', listing_bucket(K, queue, first), unpack(fields))
    for k = 1, #got do ids[i + k - 1] = got[k] end
    i = j
  end
  return ids, nums
end

local function listing_remove(K, queue, n)
  redis.call('HDEL', listing_bucket(K, queue, n), n % LISTING_BUCKET)
end

local MAX_ERRORS = 50

-- Appends to a record's error history (the latest MAX_ERRORS entries, JSON).
local function push_error(r, attempt, message, at)
  local errors = {}
  if r.errors ~= '' then
    local ok, decoded = pcall(cjson.decode, r.errors)
    if ok and type(decoded) == 'table' then errors = decoded end
  end
  -- The attempt's worker, when it had one (the console's timeline, issue 33).
  local worker = nil
  if r.worker ~= nil and r.worker ~= '' then worker = r.worker end
  errors[#errors + 1] = { attempt = attempt, message = message, at = at, worker = worker }
  while #errors > MAX_ERRORS do table.remove(errors, 1) end
  r.errors = cjson.encode(errors)
end

local function lease_refusal(state, held_token, lease_until, token, now)
  if state ~= 'active' or held_token ~= token then return { 'stale', state } end
  if lease_until == '' or lease_until <= now then return { 'expired' } end
  return nil
end

local function lease_check(r, token, now)
  return lease_refusal(r.state, r.token, r.lease_until, token, now)
end

local function job_at(K, id)
  local key = K.job .. id
  local r = job_load(key)
  if r == nil then return nil, { 'missing' } end
  if is_error(r) then return nil, r end
  return key, r
end

local function leased_job(K, id, token, now)
  local key, r = job_at(K, id)
  if not key then return nil, r end
  local refusal = lease_check(r, token, now)
  if refusal then return nil, refusal end
  return key, r
end

-- A job enters the finished set (retention). Returns 1 when the caller must put the
-- namespace in the prune due-set (docs/DESIGN.md, "Pruning"), which no script may
-- write (it is outside the namespace's slot): when the set was empty before (the
-- namespace is not registered), and again whenever its size reaches a power of two
-- or a multiple of 512, so count retention is visited soon and a registration lost
-- with a reply is made again. O(log N). finish_crossed(before, n): whether a size
-- the set passed through on its way from `before` to `n` entries meets that rule.
local function finish_crossed(before, n)
  if n <= before then return 0 end
  if math.floor(n / 512) > math.floor(before / 512) then return 1 end
  local power = 1 -- the largest power of two up to n: in (before, n]?
  while power * 2 <= n do power = power * 2 end
  if power > before then return 1 end
  return 0
end

local function finish_entry(done, id, now)
  redis.call('ZADD', done, now, id)
  local n = redis.call('ZCARD', done)
  return finish_crossed(n - 1, n)
end

-- AckJob's transition, also run for the acks a claim carries and for AckJobs (issue
-- 15): completes job `id` if `token` is its current, unexpired lease. Returns the
-- reply items { 'ok', queue } and whether the namespace must be registered for
-- pruning (finish_entry), or the refusal (lease_check / job_at: { 'missing' },
-- { 'stale', state }, { 'expired' }, or the record's DUEQ_CORRUPT error) and 0.
-- Retention per job (issue 36), filled in at the end of this file: retention.finish
-- applies a finished job's own rule, or finish_entry when it has none. (One table,
-- not a local each: a script's main function may hold at most 200 locals, and
-- dispatch_due.lua, which takes the schedule library too, is close to it.)
local retention = {}
-- Flow control (issue 32): lib/flow.lua, prepended after this file, fills it in;
-- the transitions here call it (a job made ready, a lease ended).
local flow = {}
-- Job dependencies (issue 34): lib/graph.lua, prepended after flow.lua, fills it in;
-- retention.finish hands it every finished node of a flow.
local graph = {}

local function complete_job(K, meta, done, id, token, now, batch, result)
  local key = K.job .. id
  local p = packed_load(key)
  if p == nil then return { 'missing' }, 0 end
  if is_error(p) then return p, 0 end
  local created = p[P_CREATED]
  local refusal = lease_refusal(STATE_NAME[p[P_STATE]], p[P_TOKEN] or '',
    rel_in(p[P_LEASE_UNTIL], created), token, now)
  if refusal then return refusal, 0 end
  p[P_STATE], p[P_UPDATED] = STATE_CODE.completed, now - created
  packed_put(p, P_FINISHED, now - created)
  p[P_LEASE_UNTIL] = ''
  if result and result ~= '' then packed_put(p, P_RESULT, result) end
  packed_save(key, p)
  local queue = p[P_QUEUE]
  flow.woke = math.max(flow.woke or 0, flow.finish(meta, queue, p[P_CKEY]))
  -- The queue's completed total (issue 33): a batch counts its jobs once per queue.
  if not batch then redis.call('HINCRBY', meta .. ':q:' .. queue, 'completed', 1) end
  -- A job with its own retention rule (issue 36) takes the unbatched way; one
  -- without (the record ends before P_RETAIN) pays this length check.
  if #p >= P_RETAIN then
    redis.call('ZREM', K.leased .. queue, id)
    -- A node of a flow (issue 34; it has no retention rule of its own) needs only its
    -- flow, ref and state for the graph: no second decode of the record.
    if (p[P_DAG] or '') ~= '' then
      return { 'ok', queue }, graph.finished(K, meta, done, id,
        { dag = p[P_DAG], ref = p[P_REF], state = 'completed' }, now)
    end
    return { 'ok', queue }, retention.finish(K, meta, done, id, job_load(key), now)
  end
  if batch then
    local ids = batch.leased[queue]
    if not ids then
      ids = {}
      batch.leased[queue] = ids
      batch.queues[#batch.queues + 1] = queue
    end
    ids[#ids + 1] = id
    batch.done[#batch.done + 1] = batch.now_text
    batch.done[#batch.done + 1] = id
    return { 'ok', queue }, 0
  end
  redis.call('ZREM', K.leased .. queue, id)
  return { 'ok', queue }, finish_entry(done, id, now)
end

-- Many acks in one script (AckJobs, a claim's carried acks, issue 15) write each
-- index once per call rather than once per job: complete_job(..., batch) saves the
-- record and leaves its lease-set and finished-set entries in `batch`, and
-- completions_flush writes them (one ZREM per queue, one ZADD, one ZCARD) and
-- returns the prune registration finish_entry would have returned for any of them
-- (finish_crossed: a size in between that reaches the rule). Flush before anything
-- in the same script reads the lease or finished sets.
local function completions_new(now, meta)
  -- The finish time as text once, not converted again for every job in the ZADD.
  return { leased = {}, queues = {}, done = {}, now_text = string.format('%d', now),
    meta = meta }
end

local function completions_flush(K, done, batch)
  for _, q in ipairs(batch.queues) do
    redis.call('ZREM', K.leased .. q, unpack(batch.leased[q]))
    redis.call('HINCRBY', batch.meta .. ':q:' .. q, 'completed', #batch.leased[q])
  end
  if #batch.done == 0 then return 0 end
  local added = redis.call('ZADD', done, unpack(batch.done))
  local n = redis.call('ZCARD', done)
  return finish_crossed(n - added, n)
end

-- Queue state (issue 14). Keys composed from meta, like jobs_marker (keys.rs
-- `queue_state`, `queue_dead`, `queue_registry`; a library test pins them):
--   queue_state(meta, q)   hash meta .. ':q:' .. q    `pending` count, `paused` ('1')
--   queue_dead(meta, q)    zset meta .. ':dead:' .. q dead job id -> finish ms
--   queue_registry(meta)   zset meta .. ':queues'     queue name -> 0 (lex order)
-- Delayed and active counts are the sizes of the delayed and leased sets (exact: an
-- entry is there exactly while its job is in that state), dead the size of the dead
-- set, so only `pending` is a counter: count_pending(meta, r, delta) keeps it, in the
-- script that moves the job (invariant 1). A namespace whose jobs predate the counts
-- (meta `counts` unset) is recounted by Migrate (migrate_counts.lua): while it runs,
-- meta `rc:<queue>` is the next job number the recount visits of that queue (-1 once
-- the queue is done), and only jobs below it are counted by the transitions.
local function queue_state(meta, queue) return meta .. ':q:' .. queue end
local function queue_dead(meta, queue) return meta .. ':dead:' .. queue end
local function queue_registry(meta) return meta .. ':queues' end

-- held_probe(K, meta, done, queues) -> the keys that exist while the namespace holds
--   jobs of `queues`, for jobs_guard to probe when meta and the jobs marker are both
--   gone (issue 29): the finished set `done` (nil: not probed) and, per queue, its
--   ready-list priorities (one member per ready list), delayed, leased and dead sets
--   and the listing bucket of its first job numbers. Five keys a queue; the callers
--   pass the queues of their call (at most a chunk's or a claim's), or Migrate's
--   status check a bounded number of registered ones. (The queue registry alone is
--   no proof: SetQueuePolicy and PauseQueue register a queue before any job.)
local function held_probe(K, meta, done, queues)
  local keys = {}
  if done then keys[1] = done end
  for _, q in ipairs(queues) do
    keys[#keys + 1] = K.prio .. q
    keys[#keys + 1] = K.delayed .. q
    keys[#keys + 1] = K.leased .. q
    keys[#keys + 1] = queue_dead(meta, q)
    keys[#keys + 1] = listing_bucket(K, q, 1)
  end
  return keys
end

-- count_state(meta, r, field, delta): the same for another counted state (issue 34:
-- `waiting`, the flow nodes waiting for their dependencies).
local function count_state(meta, r, field, delta)
  if not COUNTS_KEPT then
    local cursor = tonumber(redis.call('HGET', meta, 'rc:' .. r.queue))
    if cursor == nil or (cursor >= 0 and r.n >= cursor) then return end
  end
  redis.call('HINCRBY', queue_state(meta, r.queue), field, delta)
end

local function count_pending(meta, r, delta) count_state(meta, r, 'pending', delta) end

-- Dead letters grouped by error (issue 33). A dead job is in exactly one group, named
-- by its queue and the fingerprint of the last message of its error history (the
-- message of the attempt that made it dead): dg.fingerprint(message) -> the
-- first 16 hex digits of the SHA-1 of dg.normalise(message): its first
-- dg.NORMALISE_BYTES bytes lower-cased, quoted strings ('...' and "...") made '…' and
-- "…", UUIDs made #, and in each run of letters and digits that holds a digit: the
-- whole run made # when it is hex, starts with 0x or is 8 or more long (an id),
-- else each run of digits made # ("30s" -> "#s"). Keys composed from meta (keys.rs
-- `dead_groups`, `dead_group`, `dead_order`; a library test pins them):
--   dg.groups(meta)            hash meta .. ':dg'  '<fp>:<queue>' -> cmsgpack
--                              { sample job id, its message (at most dg.SAMPLE_BYTES) }:
--                              the last job that joined the group
--   dg.set(meta, fp, q)        zset meta .. ':dg:' .. fp .. ':' .. q  id -> dead ms
--                              (its count, first and last seen are this set's)
--   dg.order(meta, q)          zset meta .. ':dgo' (q '': every queue) or
--                              meta .. ':dgo:' .. q  '<fp>:<queue>' -> count
-- A namespace holds at most dg.MAX groups: past it, a job whose group is
-- new joins its queue's group 'other' (fingerprint "other") instead. A group leaves
-- every key with its last job. Scores are the set's size (ZCARD), never an
-- increment, so adding a job twice (Migrate, the recount) leaves the counts exact.
-- dg.add(meta, id, r, at, keep_sample) / dg.remove(meta, id, r) (dead_add and
-- dead_remove call them; keep_sample: a group's sample is only set when it has none):
-- O(log N) plus one decode of the error history (at most MAX_ERRORS entries).
-- (One table, not a local each: see `retention` below.)
local dg = { MAX = 10000, NORMALISE_BYTES = 1024, SAMPLE_BYTES = 512 }
function dg.groups(meta) return meta .. ':dg' end
function dg.set(meta, fp, queue) return meta .. ':dg:' .. fp .. ':' .. queue end
function dg.order(meta, queue)
  if queue == '' then return meta .. ':dgo' end
  return meta .. ':dgo:' .. queue
end

dg.UUID = '%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x'

function dg.normal_word(w)
  if not string.find(w, '%d') then return nil end
  if #w >= 8 or not string.find(w, '%X') or string.find(w, '^0x%x+$') then return '#' end
  return (string.gsub(w, '%d+', '#'))
end

function dg.normalise(message)
  local s = string.lower(string.sub(message, 1, dg.NORMALISE_BYTES))
  s = string.gsub(s, "'[^']*'", "'\226\128\166'")
  s = string.gsub(s, '"[^"]*"', '"\226\128\166"')
  s = string.gsub(s, dg.UUID, '#')
  return (string.gsub(s, '%w+', dg.normal_word))
end

function dg.fingerprint(message)
  return string.sub(redis.sha1hex(dg.normalise(message)), 1, 16)
end

-- The last message of a record's error history ('' when it has none).
function dg.last_error(r)
  if r.errors == '' then return '' end
  local ok, decoded = pcall(cjson.decode, r.errors)
  if not ok or type(decoded) ~= 'table' or #decoded == 0 then return '' end
  local message = decoded[#decoded].message
  if type(message) ~= 'string' then return '' end
  return message
end

-- s cut to at most n bytes, never inside a UTF-8 character.
function dg.cut(s, n)
  if #s <= n then return s end
  local cut = n
  while cut > 0 do
    local b = string.byte(s, cut + 1)
    if b < 128 or b >= 192 then break end
    cut = cut - 1
  end
  return string.sub(s, 1, cut)
end

function dg.recount(meta, queue, fp, set)
  local field, n = fp .. ':' .. queue, redis.call('ZCARD', set)
  if n == 0 then
    redis.call('HDEL', dg.groups(meta), field)
    redis.call('ZREM', dg.order(meta, ''), field)
    redis.call('ZREM', dg.order(meta, queue), field)
  else
    redis.call('ZADD', dg.order(meta, ''), n, field)
    redis.call('ZADD', dg.order(meta, queue), n, field)
  end
end

function dg.add(meta, id, r, at, keep_sample)
  local message = dg.last_error(r)
  local fp = dg.fingerprint(message)
  local groups = dg.groups(meta)
  if redis.call('HEXISTS', groups, fp .. ':' .. r.queue) == 0
      and redis.call('HLEN', groups) >= dg.MAX then
    fp = 'other'
  end
  local set = dg.set(meta, fp, r.queue)
  redis.call('ZADD', set, at, id)
  local sample = cmsgpack.pack({ id, dg.cut(message, dg.SAMPLE_BYTES) })
  if keep_sample then
    redis.call('HSETNX', groups, fp .. ':' .. r.queue, sample)
  else
    redis.call('HSET', groups, fp .. ':' .. r.queue, sample)
  end
  dg.recount(meta, r.queue, fp, set)
end

-- The group job id (record r, dead) is in: its fingerprint, else 'other'; nil when
-- it is in neither (a job dead before the groups, until Migrate indexes it).
function dg.of(meta, id, r)
  local fp = dg.fingerprint(dg.last_error(r))
  if redis.call('ZSCORE', dg.set(meta, fp, r.queue), id) then return fp end
  if redis.call('ZSCORE', dg.set(meta, 'other', r.queue), id) then return 'other' end
  return nil
end

function dg.remove(meta, id, r)
  local fp = dg.of(meta, id, r)
  if not fp then return end
  local set = dg.set(meta, fp, r.queue)
  redis.call('ZREM', set, id)
  dg.recount(meta, r.queue, fp, set)
end

-- A job became dead / stopped being dead: its queue's dead set and its group follow
-- (r still holds the error history it died with).
local function dead_add(meta, id, r, now)
  redis.call('ZADD', queue_dead(meta, r.queue), now, id)
  dg.add(meta, id, r, now, false)
end
local function dead_remove(meta, id, r)
  redis.call('ZREM', queue_dead(meta, r.queue), id)
  dg.remove(meta, id, r)
end

-- Whether a queue is paused (claims skip it). O(1).
local function queue_paused(meta, queue)
  return redis.call('HGET', queue_state(meta, queue), 'paused') == '1'
end

-- The one job builder (issue 30): enqueue_jobs.lua and dispatch_due.lua (a schedule's
-- target) both create jobs through these.
-- jobs_first(meta, layout): the namespace's first jobs (jobs_guard found no layout)
--   record the layout they are written in, in meta and in the marker that outlives a
--   lost meta. The schedule schema is not written here: a meta lost under stored
--   schedules must stay refused until Migrate rebuilds it.
-- job_numbers(meta, queue, count) -> the first of `count` consecutive job numbers of
--   the queue; a queue's first jobs register it (Migrate's recount registers older
--   ones), and a queue new to a namespace whose counts Migrate has yet to recount is
--   counted from its first job (rc -1: count_pending).
-- job_create(K, meta, now, id, n, gseq, j) -> state ('pending' | 'delayed'): stores a
--   new job numbered n (gseq: its place in the namespace's enqueue order) from j =
--   { queue, name, payload, headers (JSON text, '{}' or '' for none), priority,
--   run_at (epoch ms), max_attempts, backoff ('exp' | 'fixed'), base, cap, jitter,
--   lease_ms, dedup ('' none), dedup_ttl, schedule, due, run ('' unless a schedule's
--   target enqueued it), retain ('' or nil: the server default; else retention.finish's
--   rule text) }: the record, its listing entry, its ready or delayed entry,
--   the pending count and the dedup key. The caller checked that the id is free.
--   With `pending` (a table), a kept pending count is added there per queue, for
--   the caller's one pending_flush(meta, pending) per call; j gains field n.
-- jobs_stored(meta, created, now): counts `created` new records in meta `stored`, the
--   job quota's count (enqueue_jobs.lua's header).
local function jobs_first(meta)
  redis.call('HSET', meta, 'jobs', JOBS_LAYOUT, 'counts', '1')
  redis.call('SET', jobs_marker(meta), JOBS_LAYOUT)
  COUNTS_KEPT = true
end

local function job_numbers(meta, queue, count)
  local first = redis.call('HINCRBY', meta, 'n:' .. queue, count) - count + 1
  if first == 1 then
    redis.call('ZADD', queue_registry(meta), 'NX', 0, queue)
    if not COUNTS_KEPT then redis.call('HSET', meta, 'rc:' .. queue, -1) end
  end
  return first
end

local function job_create(K, meta, now, id, n, gseq, j, pending)
  local state = 'pending'
  if j.waiting then
    state = 'waiting'
  elseif j.run_at > now then
    state = 'delayed'
  end
  local headers = j.headers
  if headers == '{}' then headers = '' end
  local payload, px = j.payload, ''
  if #payload > INLINE_PAYLOAD then
    redis.call('SET', K.payload .. id, payload)
    payload, px = '', 1
  end
  -- Jitter is kept in thousandths when that is exact (a byte or three), else as text.
  local jitter = (tonumber(j.jitter) or 0) * 1000
  if jitter ~= math.floor(jitter) then jitter = j.jitter end
  -- The packed array straight from j (issue 35): job_save's named record, 44
  -- fields built only to be spelled out again, cost each job about a fifth of its
  -- script time. The positions are job_save's, for a job just created: no
  -- attempts, no lease, updated = created (0 after it), no version (fresh).
  local p = { j.queue, j.name, payload, j.priority, gseq, n, STATE_CODE[state],
    0, j.max_attempts, (j.backoff == 'fixed') and 1 or 0, secs_out(j.base),
    secs_out(j.cap), jitter, secs_out(j.lease_ms), now, j.run_at - now, 0,
    '', '', '', '', headers, j.dedup, '', px, '', '', '', '', '', '', '', '',
    j.schedule or '', j.due or '', j.run or '', j.retain or '', j.fkey or '',
    j.ckey or '', j.rkey or '', j.cost or '', j.dag or '', j.ref or '', j.odf or '' }
  packed_save(K.job .. id, p, true)
  listing_add(K, j.queue, n, id)
  -- What the indexes and counts read of the new record: j with its number.
  j.n = n
  if state == 'delayed' then
    redis.call('ZADD', K.delayed .. j.queue, j.run_at, id)
  elseif state == 'waiting' then
    count_state(meta, j, 'waiting', 1)
  else
    flow.ready(K, meta, j, false)
    if pending and COUNTS_KEPT then
      pending[j.queue] = (pending[j.queue] or 0) + 1
    else
      count_pending(meta, j, 1)
    end
  end
  if j.dedup ~= '' then
    redis.call('SET', K.dedup .. j.dedup, id, 'PX', j.dedup_ttl)
  end
  return state
end

-- pending_flush(meta, pending): the pending counts job_create gathered per queue
-- (when given a table), one HINCRBY per queue.
local function pending_flush(meta, pending)
  for q, count in pairs(pending) do
    redis.call('HINCRBY', queue_state(meta, q), 'pending', count)
  end
end

-- job_spec(argv, b, now) -> the table job_create takes, from the 19 values of one job
--   after argv[b] (enqueue_jobs.lua's header lists them; enqueue_flow.lua passes the
--   same): id, queue, name, payload, headers, priority, when, when_ms, max_attempts,
--   backoff, base_ms, cap_ms, jitter, lease_ms, dedup_key, dedup_ttl_ms, dedup_mode,
--   retain, flow keys. Read in place, no table of the values first (a table or
--   closures per job measured about 15% more Redis CPU per Enqueue).
local function job_spec(argv, b, now)
  local run_at, when = now, argv[b + 7]
  if when == 'at' then
    run_at = math.max(tonumber(argv[b + 8]), now)
  elseif when == 'delay' then
    run_at = now + tonumber(argv[b + 8])
  end
  local fkey, ckey, rkey, cost = '', '', '', ''
  local flow_arg = argv[b + 19]
  if flow_arg ~= '' then
    local cut = string.find(flow_arg, ':', 1, true)
    cost = string.sub(flow_arg, 1, cut - 1)
    if cut < #flow_arg then fkey, ckey, rkey = flow.lane_keys(string.sub(flow_arg, cut + 1)) end
  end
  return {
    queue = argv[b + 2], name = argv[b + 3], payload = argv[b + 4],
    headers = argv[b + 5], priority = tonumber(argv[b + 6]),
    run_at = run_at, max_attempts = tonumber(argv[b + 9]),
    backoff = argv[b + 10], base = tonumber(argv[b + 11]),
    cap = tonumber(argv[b + 12]), jitter = argv[b + 13],
    lease_ms = tonumber(argv[b + 14]), dedup = argv[b + 15], dedup_ttl = argv[b + 16],
    retain = argv[b + 18], fkey = fkey, ckey = ckey, rkey = rkey,
    cost = tonumber(cost) or '' }
end

local function jobs_stored(meta, created, now)
  if created > 0 and redis.call('HINCRBY', meta, 'stored', created) == created then
    -- The count starts (or restarts from zero): jobs created before this moment were
    -- not counted, so prune_jobs.lua must not take them off.
    redis.call('HSETNX', meta, 'stored_since', now)
  end
end

-- Retention per job (issue 36). A job may carry its own rule for when it finishes:
-- record position retain, "<on_complete>;<on_fail>", each '' (the server default),
-- 'r' (remove as it finishes), 'n<N>' (keep the last N finished jobs of its queue
-- and state) or 't<ms>' (keep it for ms after it finished); on_fail is the rule of a
-- job that ends dead or cancelled. Every kept finished job stays in the finished set
-- (`done`), so the quota's count (enqueue_jobs.lua) and RetryJob's ZREM are as they
-- were; one kept by its own rule is scored RULE_BASE + its finish ms there, above
-- every finish time, so the server default (prune_jobs.lua: the age horizon, and the
-- count, which leaves out scores from RULE_BASE up) never reaches it. Keys composed
-- from meta (keys.rs `retain_expiry`, `queue_kept`; a library test pins them):
--   retention.expiry(meta)          zset meta .. ':expire'  id -> when it expires (ms):
--     the keep_for jobs; prune_jobs.lua deletes the expired ones in its batches
--   retention.kept(meta, state, q) zset meta .. ':kept:' .. state .. ':' .. q
--     id -> finishing order (meta `fseq`, so "newest" is the order the scripts ran
--     in, even within a millisecond): the keep_last jobs; the finishing script
--     deletes the oldest beyond N, at most TRIM_MAX per call (a later finish deletes
--     the rest)
-- retention.finish(K, meta, done, id, r, now) -> register (as finish_entry): call once the
--   record r of job id is saved finished (after dead_add for a dead one).
--   O(log N), plus TRIM_MAX removals at most.
-- retention.forget(meta, id, r): a finished job leaves its expiry and kept entries
--   (RetryJob, RetryDeadJobs, PurgeJobs), so a revived job does not count among a
--   queue's last N. O(log N); nothing for a job without a rule.
-- job_remove(K, meta, done, id, r, by_retention): deletes job id (record r, as
--   job_load read it, in any state but active: its holder would meet a missing
--   record rather than ABORTED, so the caller refuses that) and every entry that names
--   it, in the calling script (invariant 1): the record (a watcher hears it is gone:
--   announce_gone, version 0), its payload key, its listing entry, its delayed-set,
--   finished-set, expiry and kept entries, its queue's dead-set entry, its queue's
--   pending count when it was pending, its dedup key when that still names this job
--   (so the key, like the id, is free at once), and meta `stored` (the job quota's
--   count) when the record was counted there. A pending job's ready-list entry stays:
--   its number no longer resolves (the listing entry is gone), so the claim or count
--   that meets it drops or skips it (an LREM would be O(N)); a job enqueued later with
--   the same id gets a new number. by_retention: counted in its queue's `removed`
--   (ListQueues), as retention's deletions are and DeleteJob's are not. O(log N).
retention.RULE_BASE = 1125899906842624 -- 2^50 ms: past any finish time, exact in a double
retention.TRIM_MAX = 100

function retention.expiry(meta) return meta .. ':expire' end
function retention.kept(meta, state, queue) return meta .. ':kept:' .. state .. ':' .. queue end

function retention.forget(meta, id, r)
  if r.retain == '' then return end
  redis.call('ZREM', retention.expiry(meta), id)
  redis.call('ZREM', retention.kept(meta, r.state, r.queue), id)
end

local function job_remove(K, meta, done, id, r, by_retention)
  local key = K.job .. id
  redis.call('DEL', key)
  announce_gone(key, r.watch)
  drop_payload(K, id, r)
  listing_remove(K, r.queue, r.n)
  if r.state == 'delayed' then
    redis.call('ZREM', K.delayed .. r.queue, id)
  elseif r.state == 'active' then
    redis.call('ZREM', K.leased .. r.queue, id)
  elseif r.state == 'pending' then
    count_pending(meta, r, -1)
  elseif r.state == 'waiting' then
    count_state(meta, r, 'waiting', -1)
  else
    redis.call('ZREM', done, id)
    retention.forget(meta, id, r)
    if r.state == 'dead' then dead_remove(meta, id, r) end
  end
  if r.dedup ~= '' and redis.call('GET', K.dedup .. r.dedup) == id then
    redis.call('DEL', K.dedup .. r.dedup)
  end
  -- enqueue_jobs.lua counts records created since `stored_since` in `stored`.
  local since = tonumber(redis.call('HGET', meta, 'stored_since') or '')
  if since and tonumber(r.created) >= since then redis.call('HINCRBY', meta, 'stored', -1) end
  if by_retention then redis.call('HINCRBY', queue_state(meta, r.queue), 'removed', 1) end
end

function retention.rule(retain, state)
  local cut = string.find(retain, ';', 1, true) or (#retain + 1)
  if state == 'completed' then return string.sub(retain, 1, cut - 1) end
  return string.sub(retain, cut + 1)
end

-- keep_last: job id enters its queue's and state's kept set; the oldest beyond
-- `keep` leave it, deleted (an entry whose job is no longer finished in that state,
-- revived by RetryJob, is dropped alone).
function retention.keep_last(K, meta, done, id, r, keep)
  local kept = retention.kept(meta, r.state, r.queue)
  redis.call('ZADD', kept, redis.call('HINCRBY', meta, 'fseq', 1), id)
  local excess = math.min(redis.call('ZCARD', kept) - keep, retention.TRIM_MAX)
  if excess <= 0 then return end
  for _, old in ipairs(redis.call('ZRANGE', kept, 0, excess - 1)) do
    local o = job_load(K.job .. old)
    if o and not is_error(o) and o.state == r.state and o.queue == r.queue then
      job_remove(K, meta, done, old, o, true)
    else
      redis.call('ZREM', kept, old)
    end
  end
end

function retention.finish(K, meta, done, id, r, now)
  if r.dag ~= '' then return graph.finished(K, meta, done, id, r, now) end
  if r.retain == '' then return finish_entry(done, id, now) end
  local rule = retention.rule(r.retain, r.state)
  if rule == '' then return finish_entry(done, id, now) end
  local kind, arg = string.sub(rule, 1, 1), tonumber(string.sub(rule, 2))
  if kind == 'r' then
    job_remove(K, meta, done, id, r, true)
    return 0
  end
  -- As text: a number argument would go through '%.14g', too few digits for this.
  redis.call('ZADD', done, string.format('%d', retention.RULE_BASE + now), id)
  if kind == 'n' then
    retention.keep_last(K, meta, done, id, r, arg)
    return 0
  end
  -- keep_for: the namespace needs a visit when this is now its earliest expiry.
  local expiry = retention.expiry(meta)
  redis.call('ZADD', expiry, string.format('%d', now + arg), id)
  if redis.call('ZRANGE', expiry, 0, 0)[1] == id then return 1 end
  return 0
end
-- Ending a lease without its holder (issue 15's release_jobs.lua, issue 36's
-- release_job.lua share this one transition).
-- lease_end(K, done, meta, key, id, r, now, count, message) -> the packed record it
--   saved, register (finish_entry's: 1 when the namespace must be put in the prune
--   due-set; a finished job goes through retention.finish, its rule included): active
--   job r (at key) leaves its lease set, its token and deadline are
--   cleared, so its holder's next ack, fail or extend is refused as stale
--   (invariant 4); the attempt its claim counted stays counted when `count`, else it
--   is given back; a message (nil: none) goes into the error history under the
--   attempt that ended. Then, as a lease expiry (claim_jobs.lua `reclaim`): a job
--   whose cancel was requested (issue 30) ends cancelled; a counted attempt that
--   used max_attempts ends dead (its queue's dead set); else the job is pending at
--   the head of its ready list (it was claimed before the jobs behind it) and counts
--   in its queue's pending count. O(log N).
local function lease_end(K, done, meta, key, id, r, now, count, message)
  redis.call('ZREM', K.leased .. r.queue, id)
  flow.finish(meta, r.queue, r.ckey)
  if message then push_error(r, r.attempts, message, now) end
  if not count then r.attempts = math.max(r.attempts - 1, 0) end
  r.token, r.lease_until, r.updated = '', '', now
  if r.cancel == 1 then
    r.state, r.finished = 'cancelled', now
  elseif count and r.attempts >= r.max_attempts then
    r.state, r.finished = 'dead', now
  else
    r.state, r.run_at = 'pending', now
  end
  local packed = job_save(key, r)
  if r.state == 'pending' then
    flow.ready(K, meta, r, true)
    count_pending(meta, r, 1)
    return packed, 0
  end
  if r.state == 'dead' then dead_add(meta, id, r, now) end
  return packed, retention.finish(K, meta, done, id, r, now)
end

-- cancel_unstarted(K, meta, done, key, id, r, now) -> the packed record it saved,
--   register (retention.finish's): pending, delayed or waiting job r (at key) ends
--   cancelled (CancelJob, CancelFlow, PurgeJobs of a flow's node): it leaves its
--   delayed set or its state's count (a pending job's ready entry stays, dropped by the
--   claim that meets it: the record says cancelled; an LREM would be O(N)), and a
--   node of a flow tells its dependents (lib/graph.lua). O(log N).
-- cancel_request(key, now) -> the packed record, its array: asks the worker of the
--   active job at key to stop (position cancel; issue 30); written once.
local function cancel_request(key, now)
  local p, packed = packed_load(key)
  if p[P_CANCEL] ~= 1 then
    packed_put(p, P_CANCEL, 1)
    p[P_UPDATED] = now - p[P_CREATED]
    packed = packed_save(key, p)
  end
  return packed, p
end

local function cancel_unstarted(K, meta, done, key, id, r, now)
  if r.state == 'delayed' then
    redis.call('ZREM', K.delayed .. r.queue, id)
  elseif r.state == 'pending' then
    count_pending(meta, r, -1)
  else
    count_state(meta, r, 'waiting', -1)
  end
  r.state, r.finished, r.updated = 'cancelled', now, now
  local packed = job_save(key, r)
  return packed, retention.finish(K, meta, done, id, r, now)
end

-- An operator's actions on one job, and the filtered scan of a queue (issue 33). One
-- table (one local: see retention above):
-- manage.retry / manage.cancel / manage.delete(K, meta, done, id, now[, queue]) ->
--   { register, packed, px } (whether the namespace must be put in the prune
--   due-set, and what to push_job; delete: { 0 }, see below) | nil, the refusal ({ 'missing' }, { 'state', state } or
--   the record's DUEQ_CORRUPT error). RetryJob, CancelJob and DeleteJob run them for
--   one job, bulk_jobs.lua for many, so a bulk action takes each job exactly as the
--   single-job RPC would. With `queue`, a job of another queue is missing.
-- manage.matches(p, f) -> whether the packed record p matches filter f (all parts
--   that are set): state (name), name, dedup, hkey/hval (a header; hval '' = any
--   value), err (lower-case text in an error message), after/before (created in
--   [after, before), epoch ms; nil = unbounded).
-- manage.filter(argv, first) -> the filter f from seven ARGV values (name, dedup,
--   header key, header value, error text, created after, created before; '' = unset)
-- manage.scan(K, meta, queue, after, f, budget, visit) -> next_after ('' = done),
--   examined: visits, in job-number order past `after`, each job of the queue that
--   matches f: visit(id, p, packed, n) returns nil to go on, 'took' to end the call
--   after this job, 'left' to end it before (the job opens the next call). At most
--   `budget` jobs are examined and MAX_BUCKETS listing buckets read per call
--   (invariant 3). Job numbers follow creation order (each is taken in the script
--   that creates the job, at its `created`), so a scan with f.after starts at
--   manage.seek's bound and one with f.before ends at the first job created later.
-- manage.seek(K, queue, last, at) -> a job number s such that every job numbered up
--   to s was created before `at`, and the records it read: a binary search over the
--   listing buckets, one record each (the first of the bucket), O(log N). An empty
--   bucket or a stale entry proves nothing, so the search looks earlier (the bound
--   stays safe, only less tight).
local manage = { MAX_BUCKETS = 256 }

function manage.retry(K, meta, done, id, now, queue)
  local key, r = job_at(K, id)
  if not key then return nil, r end
  if queue and r.queue ~= queue then return nil, { 'missing' } end
  if r.state ~= 'dead' then return nil, { 'state', r.state } end
  if r.dag ~= '' then
    -- A node of a flow (issue 34): re-armed as RetryFlow re-arms it, with the nodes its
    -- failure cancelled or skipped (lib/graph.lua); waiting when a dependency of it is
    -- unfinished.
    graph.rearm_node(K, meta, done, graph.key(meta, r.dag), r.dag, r.ref, now)
    local register = graph.run_item(K, meta, done, { 'c', r.dag, r.ref, 0 }, now)
    if graph.queued then register = 1 end
    local p, packed = packed_load(key)
    return { register, packed, p[P_PX] }
  end
  redis.call('ZREM', done, id)
  retention.forget(meta, id, r) -- (lib/job.lua, issue 36)
  r.state, r.attempts, r.token, r.lease_until = 'pending', 0, '', ''
  r.finished, r.run_at, r.updated = '', now, now
  local packed = job_save(key, r)
  flow.ready(K, meta, r, true)
  dead_remove(meta, id, r)
  count_pending(meta, r, 1)
  return { 0, packed, r.px }
end

function manage.cancel(K, meta, done, id, now, queue)
  local key, r = job_at(K, id)
  if not key then return nil, r end
  if queue and r.queue ~= queue then return nil, { 'missing' } end
  if r.state == 'active' then
    local packed, p = cancel_request(key, now)
    return { 0, packed, p[P_PX] }
  end
  if r.state ~= 'pending' and r.state ~= 'delayed' and r.state ~= 'waiting' then
    return nil, { 'state', r.state }
  end
  local packed, register = cancel_unstarted(K, meta, done, key, id, r, now)
  return { register, packed, r.px }
end

-- With `out`, the job as it was just before goes there (push_job): what DeleteJob
-- returns (read before the payload's key goes).
function manage.delete(K, meta, done, id, _, queue, out)
  local key = K.job .. id
  local _, packed = packed_load(key)
  local r = job_load(key)
  if r == nil then return nil, { 'missing' } end
  if is_error(r) then return nil, r end
  if queue and r.queue ~= queue then return nil, { 'missing' } end
  if r.state == 'active' then return nil, { 'state', r.state } end
  -- A flow's node that has not finished (issue 34): its dependents wait on it, so it is
  -- cancelled (CancelJob, CancelFlow), not deleted.
  if r.dag ~= '' and (r.state == 'pending' or r.state == 'delayed' or r.state == 'waiting') then
    return nil, { 'state', r.state }
  end
  if out then push_job(out, K, id, packed, r.px) end
  job_remove(K, meta, done, id, r, false)
  return { 0 }
end

function manage.filter(argv, first)
  return { name = argv[first], dedup = argv[first + 1], hkey = argv[first + 2],
    hval = argv[first + 3], err = argv[first + 4], after = tonumber(argv[first + 5]),
    before = tonumber(argv[first + 6]), state = '' }
end

-- Whether one of the messages of error history `errors` (JSON) holds `text`.
function manage.errors_hold(errors, text)
  if errors == nil or errors == '' then return false end
  local ok, list = pcall(cjson.decode, errors)
  if not ok or type(list) ~= 'table' then return false end
  for _, e in ipairs(list) do
    if type(e) == 'table' and type(e.message) == 'string'
        and string.find(string.lower(e.message), text, 1, true) then
      return true
    end
  end
  return false
end

function manage.matches(p, f)
  if f.state ~= '' and STATE_NAME[p[P_STATE]] ~= f.state then return false end
  if f.name ~= '' and p[P_NAME] ~= f.name then return false end
  if f.dedup ~= '' and (p[P_DEDUP] or '') ~= f.dedup then return false end
  if f.after and p[P_CREATED] < f.after then return false end
  if f.before and p[P_CREATED] >= f.before then return false end
  if f.hkey ~= '' then
    local headers = p[P_HEADERS] or ''
    if headers == '' then return false end
    local ok, h = pcall(cjson.decode, headers)
    if not ok or type(h) ~= 'table' then return false end
    local v = h[f.hkey]
    if v == nil or (f.hval ~= '' and v ~= f.hval) then return false end
  end
  if f.err ~= '' and not manage.errors_hold(p[P_ERRORS], f.err) then return false end
  return true
end

function manage.seek(K, queue, last, at)
  local lo, hi = 0, math.floor(last / LISTING_BUCKET)
  local start, reads = 0, 0
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local fields = redis.call('HGETALL', listing_bucket(K, queue, mid * LISTING_BUCKET))
    local first, id = nil, nil
    for i = 1, #fields, 2 do
      local k = tonumber(fields[i])
      if first == nil or k < first then first, id = k, fields[i + 1] end
    end
    local p = nil
    if id then
      p = packed_load(K.job .. id)
      reads = reads + 1
    end
    if p == nil or is_error(p) or p[P_N] ~= mid * LISTING_BUCKET + first
        or p[P_QUEUE] ~= queue or p[P_CREATED] >= at then
      hi = mid - 1
    else
      start = mid * LISTING_BUCKET + first
      lo = mid + 1
    end
  end
  return start, reads
end

function manage.scan(K, meta, queue, after, f, budget, visit)
  local last = tonumber(redis.call('HGET', meta, 'n:' .. queue)) or 0
  local cursor, examined, buckets, stop = after, 0, 0, false
  if f.after and cursor == 0 then cursor, examined = manage.seek(K, queue, last, f.after) end
  while cursor < last and examined < budget and buckets < manage.MAX_BUCKETS and not stop do
    local bucket = math.floor((cursor + 1) / LISTING_BUCKET)
    local bkey = listing_bucket(K, queue, cursor + 1)
    local fields = redis.call('HGETALL', bkey)
    local entries = {}
    for i = 1, #fields, 2 do
      local n = bucket * LISTING_BUCKET + tonumber(fields[i])
      if n > cursor then entries[#entries + 1] = { n, fields[i + 1], fields[i] } end
    end
    table.sort(entries, function(a, b) return a[1] < b[1] end)
    local cut = false
    for _, e in ipairs(entries) do
      local p, packed = packed_load(K.job .. e[2])
      if p == nil or (not is_error(p) and (p[P_N] ~= e[1] or p[P_QUEUE] ~= queue)) then
        -- Pruned, or replaced by a later job of the same id: the entry goes (repair).
        redis.call('HDEL', bkey, e[3])
      elseif not is_error(p) and f.before and p[P_CREATED] >= f.before then
        -- Created after the range: so is every later job.
        examined = examined + 1
        return '', examined
      elseif not is_error(p) and manage.matches(p, f) then
        local v = visit(e[2], p, packed, e[1])
        if v == 'left' then
          cut, stop = true, true
          break
        end
        if v == 'took' then stop = true end
      end
      examined = examined + 1
      cursor = e[1]
      if stop or examined >= budget then
        cut = true
        break
      end
    end
    if not cut then cursor = math.max(cursor, (bucket + 1) * LISTING_BUCKET - 1) end
    buckets = buckets + 1
  end
  if cursor < last then return string.format('%d', cursor), examined end
  return '', examined
end

-- manage.bulk(KEYS, ARGV, action) -> the reply of retry_jobs.lua, cancel_jobs.lua and
--   delete_jobs.lua (their headers: KEYS, ARGV and reply), which differ only in the
--   action (manage.retry, manage.cancel, manage.delete) and in whether they run when
--   Redis is full, as the single-job scripts do.
function manage.bulk(keys, argv, action)
  local refused = jobs_guard(keys[2])
  if refused then return refused end
  local now = now_ms()
  local K, queue = job_keys(argv, 1), argv[9]
  local applied, register, skips = 0, 0, {}
  local function take(id)
    local done, refusal = action(K, keys[2], keys[1], id, now, queue)
    if done then
      applied = applied + 1
      if done[1] == 1 then register = 1 end
    elseif is_error(refusal) then
      skips[#skips + 1] = { id, 'corrupt' }
    else
      skips[#skips + 1] = { id, refusal[2] or refusal[1] }
    end
  end
  local next_after, examined = '', 0
  if argv[10] == '1' then
    local f = manage.filter(argv, 15)
    f.state = argv[12]
    local max_taken, taken = tonumber(argv[14]), 0
    next_after, examined = manage.scan(K, keys[2], queue, tonumber(argv[11]) or 0, f,
      tonumber(argv[13]), function(id)
        take(id)
        taken = taken + 1
        if taken >= max_taken then return 'took' end
      end)
  else
    for i = 22, #argv do
      take(argv[i])
      examined = examined + 1
    end
  end
  local out = { next_after, examined, applied, register, #skips }
  for _, s in ipairs(skips) do
    out[#out + 1], out[#out + 2] = s[1], s[2]
  end
  return out
end
