#!lua flags=allow-oom,no-writes
-- get_job: one job's record.
--
-- KEYS[1] namespace meta   <prefix>:{<ns>}:meta
-- KEYS[2] the job record   <prefix>:{<ns>}:j:<id>
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: the job id
-- Returns {} when there is no such job, else { id, its packed record as stored, its
--   payload when kept in its own key (else '') } (lib/job.lua push_job).
--
-- Read-only, O(1). Invariant 5 (docs/DESIGN.md): refused while the namespace's jobs are in an older
-- layout (a layout-1 record would read as missing).

local refused = jobs_guard(KEYS[1])
if refused then return refused end
local p, packed = packed_load(KEYS[2])
if p == nil then return {} end
if is_error(p) then return p end
local out = {}
push_job(out, job_keys(ARGV, 1), ARGV[9], packed, p[P_PX])
return out
