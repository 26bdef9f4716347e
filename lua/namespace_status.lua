#!lua flags=allow-oom,no-writes
-- namespace_status: what a namespace's store looks like, in O(1).
--
-- KEYS[1] meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids   KEYS[3] schema 3's listing top <prefix>:{<ns>}:lt
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] lock <prefix>:{<ns>}:migrate_lock
-- KEYS[6] jobs marker <prefix>:{<ns>}:meta:jobs (lib/job.lua jobs_marker)
-- KEYS[7] target index <prefix>:{<ns>}:due:t (target schedules; meta `indexed` counts
--         both indexes)
-- KEYS[8] queue registry <prefix>:{<ns>}:meta:queues (lib/job.lua queue_registry)
-- KEYS[9] finished jobs <prefix>:{<ns>}:jdone
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- Returns { schema ("" none), listing type ("set" schema 1, "zset" schema 2, "tree"
--           schema 3, "none", or another type), expected index size ("" unknown),
--           index size, lock ttl ms (-2 = not held), listing size,
--           job layout ("" none recorded), 1 if meta holds layout 1's `job_seq`,
--           1 if the jobs marker exists (jobs were stored), the namespace's job
--           sequence (meta `gseq`, 0 none), which only rises, 1 if jobs are stored
--           by the marker or, when meta has no job layout, by the data: the
--           finished set, or a ready list, delayed, leased or dead set or first
--           listing bucket of one of the first HELD_QUEUES registered queues
--           (lib/job.lua held_probe; the same judgement as jobs_guard) }.
--
-- Read-only; O(1) (at most HELD_QUEUES queues probed, only when meta lacks the job
-- layout); invariant 5 (docs/DESIGN.md): this is the O(1) check that makes a store needing Migrate,
-- or an index that lost entries, visible instead of silent.

local meta = redis.call('HMGET', KEYS[1], 'schema', 'indexed', 'jobs', 'job_seq', 'listed',
  'gseq')
local HELD_QUEUES = 32
local marker = redis.call('EXISTS', KEYS[6])
local held = marker
if held == 0 and not meta[3] then
  local queues = redis.call('ZRANGE', KEYS[8], 0, HELD_QUEUES - 1)
  local probe = held_probe(job_keys(ARGV, 1), KEYS[1], KEYS[9], queues)
  held = math.min(redis.call('EXISTS', unpack(probe)), 1)
end
local listing = redis.call('TYPE', KEYS[2])['ok']
local listed = 0
if listing == 'set' then listed = redis.call('SCARD', KEYS[2]) end
if listing == 'zset' then listed = redis.call('ZCARD', KEYS[2]) end
if listing == 'none' and redis.call('EXISTS', KEYS[3]) == 1 then
  -- Schema 3's listing (lib/schedule.lua): its size is counted in meta.
  listing, listed = 'tree', tonumber(meta[5]) or 0
end
return {
  meta[1] or '',
  listing,
  meta[2] or '',
  redis.call('ZCARD', KEYS[4]) + redis.call('ZCARD', KEYS[7]),
  redis.call('PTTL', KEYS[5]),
  listed,
  meta[3] or '',
  meta[4] and 1 or 0,
  marker,
  tonumber(meta[6]) or 0,
  held,
}
