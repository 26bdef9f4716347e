#!lua flags=allow-oom
-- list_jobs: one page of a queue's jobs in enqueue order.
--
-- KEYS[1] namespace meta (its `n:<queue>` is the queue's last job number)
--         <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] queue: the queue   ARGV[10] after: exclusive lower bound job number ("" =
--         from the start)
-- ARGV[11] page_size: page size   ARGV[12] state: state filter ("" = any)
-- ARGV[13] budget: most jobs to examine in this call (bounds the work when filtering)
-- ARGV[14] full: "1" = the full view (payload, headers, result and checkpoint); "" =
--          basic (those left empty)
-- ARGV[15] max_bytes: reply byte budget: the page ends before the job that would take its jobs'
--          bytes (lib/job.lua packed_bytes) over it (a page holds at least one job)
-- Returns { next_after ("" = done), n, then per job: id, packed record, payload
--           (lib/job.lua push_job; a basic page's records repacked without payload,
--           headers, result and checkpoint) }
--
-- Invariant 3 (docs/DESIGN.md): bounded by ARGV[13] jobs and MAX_BUCKETS listing buckets per call
-- (buckets emptied by pruning cost one HGETALL each), never a scan of the queue; a
-- page cut short by a bound still returns where to continue. Entries whose record
-- vanished (pruned) or was replaced by a later job of the same id are dropped
-- (repair). Invariant 5: refused while the namespace's jobs are in an older layout.
-- Invariant 9: the reply is bounded by ARGV[15] bytes as well as ARGV[11] jobs; a
-- basic page reads no payload key.

local refused = jobs_guard(KEYS[1])
if refused then return refused end
local K, queue = job_keys(ARGV, 1), ARGV[9]
local after = tonumber(ARGV[10]) or 0
local page, filter, budget = tonumber(ARGV[11]), ARGV[12], tonumber(ARGV[13])
local full, max_bytes = ARGV[14] == '1', tonumber(ARGV[15])
local MAX_BUCKETS = 256
local last = tonumber(redis.call('HGET', KEYS[1], 'n:' .. queue)) or 0

local out, count, examined, buckets, bytes, filled = {}, 0, 0, 0, 0, false
local cursor = after
while cursor < last and count < page and examined < budget and buckets < MAX_BUCKETS
    and not filled do
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
      redis.call('HDEL', bkey, e[3])
    elseif not is_error(p) and (filter == '' or STATE_NAME[p[P_STATE]] == filter) then
      bytes = bytes + packed_bytes(K, e[2], p, full, true, full)
      if count > 0 and bytes > max_bytes then
        cut, filled = true, true -- this job opens the next page
        break
      end
      if not full then
        p[P_PAYLOAD], p[P_HEADERS], p[P_PX] = '', '', ''
        -- Only positions the record holds: a hole would pack it as a map.
        if p[P_CHECKPOINT] then p[P_CHECKPOINT] = '' end
        if p[P_RESULT] then p[P_RESULT] = '' end
        packed = packed_of(p)
      end
      push_job(out, K, e[2], packed, p[P_PX])
      count = count + 1
    end
    examined = examined + 1
    cursor = e[1]
    if count >= page or examined >= budget then
      cut = true
      break
    end
  end
  if not cut then cursor = math.max(cursor, (bucket + 1) * LISTING_BUCKET - 1) end
  buckets = buckets + 1
end

local next_after = ''
if cursor < last then next_after = string.format('%d', cursor) end
local result = { next_after, count }
for i = 1, #out do result[#result + 1] = out[i] end
return result
