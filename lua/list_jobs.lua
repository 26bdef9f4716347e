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
-- ARGV[16..22] filter: name, dedup key, header key, header value, error text (lower
--          case), created after, created before (epoch ms): lib/job.lua
--          manage.filter ('' = unset)
-- Returns { next_after ("" = done), n, examined (jobs examined), then per job: id, packed record, payload
--           (lib/job.lua push_job; a basic page's records repacked without payload,
--           headers, result and checkpoint) }
--
-- Invariant 3 (docs/DESIGN.md): bounded by ARGV[13] jobs and MAX_BUCKETS listing buckets per call
-- (buckets emptied by pruning cost one HGETALL each), never a scan of the queue; a
-- page cut short by a bound still returns where to continue (lib/job.lua
-- manage.scan, which a time range narrows: issue 33). Entries whose record
-- vanished (pruned) or was replaced by a later job of the same id are dropped
-- (repair). Invariant 5: refused while the namespace's jobs are in an older layout.
-- Invariant 9: the reply is bounded by ARGV[15] bytes as well as ARGV[11] jobs; a
-- basic page reads no payload key.

local K, queue = job_keys(ARGV, 1), ARGV[9]
-- Only when meta has no job layout: whether the queue holds jobs (lib/job.lua).
local refused = jobs_guard(KEYS[1], function() return held_probe(K, KEYS[1], nil, { queue }) end)
if refused then return refused end
local after = tonumber(ARGV[10]) or 0
local page, budget = tonumber(ARGV[11]), tonumber(ARGV[13])
local full, max_bytes = ARGV[14] == '1', tonumber(ARGV[15])
local f = manage.filter(ARGV, 16)
f.state = ARGV[12]

local out, count, bytes = {}, 0, 0
local function visit(id, p, packed)
  bytes = bytes + packed_bytes(K, id, p, full, true, full)
  -- This job opens the next page.
  if count > 0 and bytes > max_bytes then return 'left' end
  if not full then
    p[P_PAYLOAD], p[P_HEADERS], p[P_PX] = '', '', ''
    -- Only positions the record holds: a hole would pack it as a map.
    if p[P_CHECKPOINT] then p[P_CHECKPOINT] = '' end
    if p[P_RESULT] then p[P_RESULT] = '' end
    packed = packed_of(p)
  end
  push_job(out, K, id, packed, p[P_PX])
  count = count + 1
  if count >= page then return 'took' end
end
local next_after, examined = manage.scan(K, KEYS[1], queue, after, f, budget, visit)

local result = { next_after, count, examined }
for i = 1, #out do result[#result + 1] = out[i] end
return result
