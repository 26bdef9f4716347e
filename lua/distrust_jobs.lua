#!lua flags=allow-oom
-- distrust_jobs: the namespace monitor saw the job sequence go backwards (the store
-- was rolled back or its data deleted under the service): refuse the namespace's job
-- calls until Migrate rebuilds its job metadata from the records (issue 29).
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta
-- ARGV[1] seen: the job sequence (meta `gseq`) the monitor saw before
-- Returns 1 if the namespace is now refused, 0 if its sequence is back at or past
-- `seen` (nothing written).
--
-- How it refuses: meta loses its job layout (`jobs`) and the jobs marker is written,
-- which is exactly a lost meta to jobs_guard (lib/job.lua): every job script answers
-- DUEQ_MIGRATE_JOBS, GetNamespaceStatus reports it, and Migrate's recount raises the
-- job numbers and the sequence to the highest the stored records hold, then records
-- the layout again. Serving on would hand out job numbers that jobs stored before
-- the rollback may hold, and nobody would have to look at what was lost.
--
-- Invariant 2 (docs/DESIGN.md: compare-and-set): the sequence is read again here, so
-- a namespace whose writes carried it past `seen` since the monitor looked is left
-- alone. Invariant 5: a store that went back in time is refused, never silent.
-- allow-oom: the refusal must land even in a full Redis (it frees nothing, but it
-- writes at most one small key).

local meta = KEYS[1]
local now = tonumber(redis.call('HGET', meta, 'gseq')) or 0
if now >= tonumber(ARGV[1]) then return 0 end
redis.call('HDEL', meta, 'jobs')
redis.call('SET', jobs_marker(meta), JOBS_LAYOUT)
return 1
