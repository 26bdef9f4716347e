#!lua flags=allow-oom
-- release_jobs: give back leases a claim took but its reply could not carry.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone (unused; every
--         job script takes it first)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] key prefixes (lib/job.lua job_keys): job, payload, ready, priorities,
--            delayed, leased, listing, dedup
-- ARGV[9..] job id, lease token: groups of 2
-- Returns the number of jobs released.
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 4 (a lease is the only authority): only a job still active under the given token
--   is released; the attempt the claim counted is taken back, and the job goes to the
--   head of its ready list, so it is claimed next, as if the claim had not happened.
-- * 9 (work is never handed out that the reply cannot carry): the service calls this
--   when an encoded claim reply would pass the message limit.
-- * 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local released = 0
for i = 9, #ARGV - 1, 2 do
  local id = ARGV[i]
  local key, r = leased_job(K, id, ARGV[i + 1], now)
  if key then
    redis.call('ZREM', K.leased .. r.queue, id)
    r.state, r.token, r.lease_until, r.worker = 'pending', '', '', ''
    r.attempts, r.run_at, r.updated = math.max(r.attempts - 1, 0), now, now
    job_save(key, r)
    ready_push(K, r.queue, r.priority, r.n, true)
    count_pending(KEYS[2], r, 1)
    released = released + 1
  end
end
return released
