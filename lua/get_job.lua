#!lua flags=allow-oom
-- get_job: one job's record.
--
-- KEYS[1] namespace meta   <prefix>:{<ns>}:meta
-- KEYS[2] the job record   <prefix>:{<ns>}:j:<id>
-- ARGV[1..8] key prefixes (lib/job.lua job_keys): job, payload, ready, priorities,
--            delayed, leased, listing, dedup
-- ARGV[9] job id
-- Returns {} when there is no such job, else its fields (lib/job.lua job_fields).
--
-- Read-only, O(1). Invariant 5 (docs/DESIGN.md): refused while the namespace's jobs are in an older
-- layout (a layout-1 record would read as missing).

local refused = jobs_guard(KEYS[1])
if refused then return refused end
local r = job_load(KEYS[2])
if r == nil then return {} end
if is_error(r) then return r end
return job_fields(job_keys(ARGV, 1), ARGV[9], r)
