-- peek_jobs: what the per-namespace job wake-up timer needs, in one call.
--
-- KEYS[1] finished jobs (unused; routes the call to the namespace's slot)
-- ARGV[1..6] key prefixes: job, ready, delayed, leased, listing, dedup
-- ARGV[7..] queue names
-- Returns { now ms, earliest future delayed run or lease deadline ("" none),
--           then per queue: how many jobs are claimable now (ready + due delayed +
--           expired leases) }
--
-- Read-only. O(Q log N): ZCARD, ZCOUNT and ZRANGE 0 0 per queue. Invariant 7: now is
-- Redis TIME, so every replica's timer agrees on what is claimable.

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local P_READY, P_DELAYED, P_LEASED = ARGV[2], ARGV[3], ARGV[4]
local earliest = nil
local counts = {}
for i = 7, #ARGV do
  local q = ARGV[i]
  local n = redis.call('ZCARD', P_READY .. q)
  for _, k in ipairs({ P_DELAYED .. q, P_LEASED .. q }) do
    n = n + redis.call('ZCOUNT', k, '-inf', now)
    local later = redis.call('ZRANGEBYSCORE', k, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if #later > 0 then
      local s = tonumber(later[2])
      if earliest == nil or s < earliest then earliest = s end
    end
  end
  counts[#counts + 1] = n
end
local out = { now, earliest or '' }
for i = 1, #counts do out[#out + 1] = counts[i] end
return out
