#!lua flags=allow-oom
-- release_jobs: give back leases a claim took but its reply could not carry, or that
-- a worker stream held when it broke (issue 15).
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] mode: 'unsent' (the claim's reply could not carry them) or 'abandoned'
--         (the stream that held them broke)
-- ARGV[10..] lease{id, token}: job id, lease token: groups of 2
-- Returns { released, register (1: put the namespace in the prune due-set) }
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 4 (a lease is the only authority): only a job still active under the given token
--   is released; the attempt the claim counted is taken back, and the job goes to the
--   head of its ready list, so it is claimed next, as if the claim had not happened.
--   An abandoned job is treated as its lease expiring now (claim_jobs.lua `reclaim`):
--   the attempt counts, the error 'worker stream closed' is recorded, and a job that
--   has used max_attempts goes dead, so a job that kills its worker cannot loop.
--   A job whose cancel was requested (issue 30) ends cancelled in either mode: no
--   worker is left to stop it, and it is not handed out again. The transition is
--   lib/job.lua lease_end, which ReleaseJob (release_job.lua) shares.
-- * 9 (work is never handed out that the reply cannot carry): the service calls this
--   when an encoded claim reply would pass the message limit.
-- * 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local abandoned = ARGV[9] == 'abandoned'
local released, register = 0, 0
for i = 10, #ARGV - 1, 2 do
  local id = ARGV[i]
  local key, r = leased_job(K, id, ARGV[i + 1], now)
  if key then
    local message = nil
    if abandoned then
      message = 'worker stream closed'
    else
      r.worker = ''
    end
    local _, asked = lease_end(K, KEYS[1], KEYS[2], key, id, r, now, abandoned, message)
    register = math.max(register, asked)
    released = released + 1
  end
end
return { released, register }
