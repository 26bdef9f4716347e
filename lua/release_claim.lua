#!lua flags=allow-oom
-- release_claim: give back what one claim leased, by its token base alone, when its
-- reply was lost (a timeout, a dropped connection) or `--redis-wait-replicas` could
-- not confirm it (issue 29 item 11), and make sure a claim with that token base
-- that has not run yet takes nothing when it does.
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- KEYS[3] the claim's receipt (list of the ids it leased, in order; claim_jobs.lua)
--         <prefix>:{<ns>}:meta:claim:<token_base>
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] token_base: the claim's lease token base (the i-th id's token is base.i)
-- Returns { released, register (1: put the namespace in the prune due-set) }
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 4 (a lease is the only authority): only a job still active under the token the
--   claim gave it is released, as release_jobs.lua's 'unsent' mode releases it
--   (lib/job.lua lease_end): pending again at the head of its ready list, the
--   attempt the claim counted taken back, as if never claimed; a cancel-requested
--   job ends cancelled. A job acked, failed or re-handed since is left alone.
-- * 4: the receipt is then replaced by the mark [""] for as long as a receipt is
--   kept, so a claim with this token base still on its way (sent before its caller
--   gave up) claims nothing.
-- * 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local base = ARGV[9]
local ids = redis.call('LRANGE', KEYS[3], 0, -1)
local released, register = 0, 0
for i, id in ipairs(ids) do
  local key, r = leased_job(K, id, base .. '.' .. string.format('%d', i), now)
  if key then
    r.worker = ''
    local _, asked = lease_end(K, KEYS[1], KEYS[2], key, id, r, now, false, nil)
    register = math.max(register, asked)
    released = released + 1
  end
end
redis.call('DEL', KEYS[3])
redis.call('RPUSH', KEYS[3], '')
redis.call('PEXPIRE', KEYS[3], 60000)
return { released, register }
