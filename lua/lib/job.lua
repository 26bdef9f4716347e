-- job: prelude prepended to every job script (src/store/scripts.rs concatenates it):
-- the job layout guard, the packed job record, and the ready lists and listing
-- buckets that index it.
--
-- Layout 2 (this file). Per job, one string key holds the record, packed with
-- cmsgpack as a positional array (RECORD below); the job id is the key's last part
-- and is not repeated inside. Times other than `created` are kept as milliseconds
-- after `created` ('' when unset), so a fresh job's times cost a byte each; state
-- and backoff kind are small integers; whole-second durations are kept in seconds;
-- empty trailing fields are left off. A string
-- is stored the same way whatever Redis's hash-max-listpack-* settings are, so a
-- large payload never flips the record into a bigger encoding.
--   ready:    list  <ready>l:<priority>:<queue>   job numbers n (see listing), FIFO
--             (pushed at the tail; a job coming back from a lease or a retry goes to
--             the head); a number is a few bytes where an id is tens
--             zset  <ready>p:<queue>              priority -> -priority, one member per
--             ready list that may exist (a member whose list is gone is dropped when met)
--   listing:  hash  <listing><n div 64>:<queue>   field n mod 64 -> job id, where n is
--             the job's number within its queue (meta field `n:<queue>`), so a queue's
--             jobs are listed in enqueue order, 64 to a bucket
--
-- jobs_guard(meta) -> nil when the namespace's jobs use layout 2 (meta `jobs`) or it
--   never held jobs; else an error reply "DUEQ_MIGRATE_JOBS <found> <meta key>" the
--   service turns into FAILED_PRECONDITION with the Migrate command. Layout 1 (one
--   hash per job, sorted-set ready and listing indexes) is recognised by the
--   `job_seq` counter it kept in meta.
-- job_load(key) -> record table | nil (missing) | error reply (not a layout-2 record)
-- job_save(key, record)
-- job_fields(job prefix, id, record) -> flat field/value list, the shape
--   src/store/jobs.rs decodes (a payload kept in its own key is read back here)
-- set_payload / payload_of / drop_payload: a payload over INLINE_PAYLOAD bytes lives
--   in <prefix>:{<ns>}:jp:<id> instead of the record
--
-- Invariant 5 (migration explicit, never silent): job scripts refuse a namespace
-- whose jobs are in another layout instead of reading them as missing.

local JOBS_LAYOUT = '2'
local LISTING_BUCKET = 64

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function jobs_guard(meta)
  local found = redis.call('HGET', meta, 'jobs')
  if found == JOBS_LAYOUT then return nil end
  if not found then
    if redis.call('HEXISTS', meta, 'job_seq') == 0 then return nil end
    found = '1'
  end
  return redis.error_reply('DUEQ_MIGRATE_JOBS ' .. found .. ' ' .. meta)
end

-- Positions of the packed array. Never reorder: stored records depend on it. The
-- fields after REQUIRED are left off the end while they are empty (a fresh job
-- stores none of them), most often set first.
local RECORD = { 'queue', 'name', 'payload', 'priority', 'gseq', 'n', 'state',
  'attempts', 'max_attempts', 'backoff', 'base', 'cap', 'jitter', 'lease_ms', 'created',
  'run_at', 'updated',
  'worker', 'token', 'finished', 'lease_until', 'headers', 'dedup', 'errors', 'px' }
local REQUIRED = 17
local RELATIVE = { run_at = true, updated = true, lease_until = true, finished = true }
local STATE_CODE = { pending = 1, delayed = 2, active = 3, completed = 4, dead = 5,
  cancelled = 6 }
local STATE_NAME = {}
for name, code in pairs(STATE_CODE) do STATE_NAME[code] = name end

-- Durations that are whole seconds (backoff base and cap, lease: nearly all of them)
-- are kept as -seconds, one to three bytes where milliseconds take three to five.
local SECONDS = { base = 11, cap = 12, lease_ms = 14 }

local function job_load(key)
  local raw = redis.pcall('GET', key)
  if raw == false then return nil end
  local ok, packed = false, nil
  if type(raw) == 'string' then ok, packed = pcall(cmsgpack.unpack, raw) end
  if not ok or type(packed) ~= 'table' or #packed < REQUIRED or #packed > #RECORD
      or STATE_NAME[packed[7]] == nil then
    return redis.error_reply('DUEQ_CORRUPT ' .. key)
  end
  local r = {}
  for i, f in ipairs(RECORD) do
    local v = packed[i]
    if v == nil then v = '' end
    r[f] = v
  end
  for f in pairs(RELATIVE) do
    if r[f] ~= '' then r[f] = r.created + r[f] end
  end
  r.state = STATE_NAME[r.state]
  for f in pairs(SECONDS) do
    if r[f] < 0 then r[f] = -r[f] * 1000 end
  end
  if r.backoff == 1 then r.backoff = 'f' else r.backoff = 'e' end
  -- Jitter is kept in thousandths when that is exact (a byte or three), else as text.
  if type(r.jitter) == 'number' then r.jitter = tostring(r.jitter / 1000) end
  return r
end

local function job_save(key, r)
  local packed = {}
  local last = REQUIRED
  for i, f in ipairs(RECORD) do
    local v = r[f]
    if RELATIVE[f] and v ~= '' then v = v - r.created end
    packed[i] = v
    if i > REQUIRED and v ~= '' then last = i end
  end
  for i = last + 1, #RECORD do packed[i] = nil end
  packed[7] = STATE_CODE[r.state]
  for _, i in pairs(SECONDS) do
    local ms = packed[i]
    if ms > 0 and ms % 1000 == 0 then packed[i] = -(ms / 1000) end
  end
  if r.backoff == 'f' then packed[10] = 1 else packed[10] = 0 end
  local thousandths = (tonumber(r.jitter) or 0) * 1000
  if thousandths == math.floor(thousandths) then packed[13] = thousandths end
  redis.call('SET', key, cmsgpack.pack(packed))
end

-- Payloads up to this size live in the record; a larger one gets a key of its own
-- (record field px = 1), so the transitions, which rewrite the record, never copy
-- it, and the extra key's ~100 B are under a tenth of what it holds.
local INLINE_PAYLOAD = 1024

-- <prefix>:{<ns>}:jp:<id>, from the job prefix <prefix>:{<ns>}:j: (the `jp:` infix
-- differs from `j:` before any id starts, so no record key can equal it).
local function payload_key(p_job, id)
  return string.sub(p_job, 1, -3) .. 'jp:' .. id
end

local function set_payload(p_job, id, r, payload)
  if #payload > INLINE_PAYLOAD then
    redis.call('SET', payload_key(p_job, id), payload)
    r.payload, r.px = '', 1
  else
    if r.px == 1 then redis.call('DEL', payload_key(p_job, id)) end
    r.payload, r.px = payload, ''
  end
end

local function payload_of(p_job, id, r)
  if r.px == 1 then return redis.call('GET', payload_key(p_job, id)) or '' end
  return r.payload
end

local function drop_payload(p_job, id, r)
  if r.px == 1 then redis.call('DEL', payload_key(p_job, id)) end
end

local function job_fields(p_job, id, r)
  local errors = r.errors
  if errors == '' then errors = '[]' end
  return { 'id', id, 'queue', r.queue, 'name', r.name, 'payload', payload_of(p_job, id, r),
    'headers', r.headers, 'priority', r.priority, 'seq', r.n, 'state', r.state,
    'attempts', r.attempts, 'max_attempts', r.max_attempts,
    'backoff', r.backoff == 'f' and 'fixed' or 'exp', 'backoff_base_ms', r.base,
    'backoff_cap_ms', r.cap, 'backoff_jitter', r.jitter, 'lease_ms', r.lease_ms,
    'created_ms', r.created, 'run_at_ms', r.run_at, 'updated_ms', r.updated,
    'token', r.token, 'lease_until', r.lease_until, 'worker', r.worker,
    'finished_ms', r.finished, 'errors', errors, 'dedup_key', r.dedup }
end

-- Appends a reply's record: field count, then the fields.
local function push_record(out, p_job, id, r)
  local fields = job_fields(p_job, id, r)
  out[#out + 1] = #fields
  for i = 1, #fields do out[#out + 1] = fields[i] end
end

local function ready_list(p_ready, queue, priority)
  return p_ready .. 'l:' .. string.format('%d', priority) .. ':' .. queue
end

-- Makes job number n of the queue claimable: at the tail of its priority's list, or at
-- the head for a job coming back (expired lease, retry), which is older than
-- everything behind it.
local function ready_push(p_ready, queue, priority, n, at_head)
  local list = ready_list(p_ready, queue, priority)
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
    redis.call('ZADD', p_ready .. 'p:' .. queue, -priority, string.format('%d', priority))
  end
end

local function listing_bucket(p_listing, queue, n)
  return p_listing .. string.format('%d', math.floor(n / LISTING_BUCKET)) .. ':' .. queue
end

local function listing_add(p_listing, queue, n, id)
  redis.call('HSET', listing_bucket(p_listing, queue, n), n % LISTING_BUCKET, id)
end

-- The id of job number n of the queue, or nil once it is pruned.
local function listing_id(p_listing, queue, n)
  return redis.call('HGET', listing_bucket(p_listing, queue, n), n % LISTING_BUCKET)
end

local function listing_remove(p_listing, queue, n)
  redis.call('HDEL', listing_bucket(p_listing, queue, n), n % LISTING_BUCKET)
end

local MAX_ERRORS = 50

-- Appends to a record's error history (the latest MAX_ERRORS entries, JSON).
local function push_error(r, attempt, message, at)
  local errors = {}
  if r.errors ~= '' then
    local ok, decoded = pcall(cjson.decode, r.errors)
    if ok and type(decoded) == 'table' then errors = decoded end
  end
  errors[#errors + 1] = { attempt = attempt, message = message, at = at }
  while #errors > MAX_ERRORS do table.remove(errors, 1) end
  r.errors = cjson.encode(errors)
end

local function is_error(x)
  return type(x) == 'table' and x.err ~= nil
end
