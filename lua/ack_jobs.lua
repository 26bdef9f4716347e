#!lua flags=allow-oom
-- ack_jobs: complete many claimed jobs, each if the caller still holds its lease
-- (AckJobs; and the acks a claim carried when Redis refused the claim as full).
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] result_count: number R of the acks that carry a result (issue 30)
-- ARGV[10..] leases, results: the acks (job id, lease token: 2 values each, at most
--            1,000; the service bounds it), then the R results (the ack's index from
--            0, the result: 2R values)
-- Returns { now, register (1: put the namespace in the prune due-set), woke (1: a flow
--           slot freed may let a waiting claim run: lib/flow.lua flow.finish), then per ack
--           in ARGV order: tag, detail } (tag, detail as claim_jobs.lua's acks)
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 4 (a lease is the only authority): each ack is AckJob's transition
--   (lib/job.lua complete_job); one refused ack changes nothing and does not stop the
--   others.
-- * 1, 3: each job leaves its lease set and enters the finished set in this script
--   (lib/job.lua completions_flush: one ZREM per queue and one ZADD for the batch);
--   O(log N) per ack.
-- * 5: refused while the namespace's jobs are in an older layout.
-- * allow-oom: finishing work frees memory; a full Redis must still take acks.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local out = { now, 0, 0 }
local completions = completions_new(now, KEYS[2])
local result_count = tonumber(ARGV[9])
local last = #ARGV - 2 * result_count
-- Results by the ARGV position of their ack's id (nil when none carries one).
local results = nil
if result_count > 0 then
  results = {}
  for i = last + 1, #ARGV - 1, 2 do results[10 + 2 * tonumber(ARGV[i])] = ARGV[i + 1] end
end
local register = 0
for i = 10, last - 1, 2 do
  -- (a job with its own retention rule or of a flow is finished unbatched: its
  -- registration, e.g. graph work queued, comes back here)
  local outcome, asked = complete_job(K, KEYS[2], KEYS[1], ARGV[i], ARGV[i + 1], now,
    completions, results and results[i])
  register = math.max(register, asked or 0)
  if is_error(outcome) then
    out[#out + 1], out[#out + 2] = 'corrupt', outcome.err
  else
    out[#out + 1], out[#out + 2] = outcome[1], outcome[2] or ''
  end
end
out[2] = math.max(register, completions_flush(K, KEYS[1], completions))
out[3] = flow.woke or 0
return out
