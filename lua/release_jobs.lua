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
--   worker is left to stop it, and it is not handed out again.
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
    redis.call('ZREM', K.leased .. r.queue, id)
    r.token, r.lease_until, r.updated = '', '', now
    if not abandoned then
      r.attempts, r.worker = math.max(r.attempts - 1, 0), ''
    else
      push_error(r, r.attempts, 'worker stream closed', now)
    end
    if r.cancel == 1 then
      r.state, r.finished = 'cancelled', now
      job_save(key, r)
      register = math.max(register, retention.finish(K, KEYS[2], KEYS[1], id, r, now))
    elseif abandoned and r.attempts >= r.max_attempts then
      r.state, r.finished = 'dead', now
      job_save(key, r)
      dead_add(KEYS[2], id, r, now)
      register = math.max(register, retention.finish(K, KEYS[2], KEYS[1], id, r, now))
    else
      r.state, r.run_at = 'pending', now
      job_save(key, r)
      ready_push(K, r.queue, r.priority, r.n, true)
      count_pending(KEYS[2], r, 1)
    end
    released = released + 1
  end
end
return { released, register }
