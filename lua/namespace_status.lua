#!lua flags=allow-oom
-- namespace_status: what a namespace's store looks like, in O(1).
--
-- KEYS[1] meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids   KEYS[3] schema 3's listing top <prefix>:{<ns>}:lt
-- KEYS[4] due index <prefix>:{<ns>}:due   KEYS[5] lock <prefix>:{<ns>}:migrate_lock
-- KEYS[6] jobs marker <prefix>:{<ns>}:meta:jobs (lib/job.lua jobs_marker)
-- KEYS[7] target index <prefix>:{<ns>}:due:t (target schedules; meta `indexed` counts
--         both indexes)
-- KEYS[8] queue registry <prefix>:{<ns>}:meta:queues (lib/job.lua queue_registry)
-- Returns { schema ("" none), listing type ("set" schema 1, "zset" schema 2, "tree"
--           schema 3, "none", or another type), expected index size ("" unknown),
--           index size, lock ttl ms (-2 = not held), listing size,
--           job layout ("" none recorded), 1 if meta holds layout 1's `job_seq`,
--           1 if the jobs marker exists (jobs were stored), the namespace's job
--           sequence (meta `gseq`, 0 none), which only rises, 1 if jobs were stored
--           by the marker or, lost with meta, by the data (the queue registry:
--           lib/job.lua jobs_held) }.
--
-- Read-only; invariant 5 (docs/DESIGN.md): this is the O(1) check that makes a store needing Migrate,
-- or an index that lost entries, visible instead of silent.

local meta = redis.call('HMGET', KEYS[1], 'schema', 'indexed', 'jobs', 'job_seq', 'listed',
  'gseq')
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
  redis.call('EXISTS', KEYS[6]),
  tonumber(meta[6]) or 0,
  math.min(redis.call('EXISTS', KEYS[6], KEYS[8]), 1),
}
