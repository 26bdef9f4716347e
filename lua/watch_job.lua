#!lua flags=allow-oom
-- watch_job: one job's record for WatchJob, marking the watchers' interest in it.
--
-- KEYS[1] namespace meta   <prefix>:{<ns>}:meta
-- KEYS[2] the job record   <prefix>:{<ns>}:j:<id>
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: the job id
-- ARGV[10] watch_ms: how long from now the record's writes are announced
-- Returns {} when there is no such job, else { id, its packed record as stored, its
--   payload when kept in its own key (else '') } (lib/job.lua push_job).
--
-- The record's watch position (lib/job.lua, "Job changes") is moved to now +
-- watch_ms when less than half of that is left, with a plain SET of the record:
-- marking interest is not a change of the job, so its version stays. Every later
-- write of the record (packed_save) then PUBLISHes it until the mark lapses; the
-- service renews the mark while it has watchers (src/watch.rs).
--
-- O(1). Invariant 5 (docs/DESIGN.md): refused while the namespace's jobs are in an
-- older layout (a layout-1 record would read as missing).

local refused = jobs_guard(KEYS[1])
if refused then return refused end
local p, packed = packed_load(KEYS[2])
if p == nil then return {} end
if is_error(p) then return p end
local now, span = now_ms(), tonumber(ARGV[10])
local watch = tonumber(p[P_WATCH])
if watch == nil or watch < now + span / 2 then
  packed_put(p, P_WATCH, now + span)
  packed = packed_of(p)
  redis.call('SET', KEYS[2], packed)
end
local out = {}
push_job(out, job_keys(ARGV, 1), ARGV[9], packed, p[P_PX])
return out
