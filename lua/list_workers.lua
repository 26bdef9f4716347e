#!lua flags=allow-oom
-- list_workers: a page of a namespace's worker sessions, and its active jobs whose
-- leases end soonest (issue 33).
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- KEYS[3] the worker sessions (hash)              <prefix>:{<ns>}:meta:workers
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] stale_ms: a session last published longer ago than this is stale: its
--         replica died (it is removed, not listed)
-- ARGV[10] cursor: the HSCAN cursor of the page ("0" for the first)
-- ARGV[11] limit: about how many sessions the page holds (1-1000)
-- ARGV[12] leases: most expiring leases to return (0: none)
-- Returns { now, next cursor ("0": no more), n, then n stored session values
--           ("<last seen ms>\n<record>"), m, then per lease 4 values: job id,
--           queue, worker, lease deadline (epoch ms) }
--
-- Sessions: HSCAN from the cursor until about `limit` live ones are read, at most 4
-- steps (O(limit) each); the stale ones met are removed (a dead replica's sessions go
-- as readers meet them, or with the hash's ttl). Leases: the first 100 queues of
-- the queue registry, their lease sets (lib/job.lua `leased`, scored by deadline)
-- merged by their heads: O(Q log N + leases log N). Read otherwise; invariant 5:
-- refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local MAX_QUEUES, MAX_STEPS = 100, 4
local meta, hkey = KEYS[2], KEYS[3]
local stale, cursor = tonumber(ARGV[9]), ARGV[10]
local limit, want = tonumber(ARGV[11]), tonumber(ARGV[12])
local now = now_ms()
local K = job_keys(ARGV, 1)

local sessions, steps = {}, 0
repeat
  local page = redis.call('HSCAN', hkey, cursor, 'COUNT', limit)
  cursor = page[1]
  local kv = page[2]
  for i = 1, #kv, 2 do
    local value = kv[i + 1]
    local cut = string.find(value, '\n', 1, true)
    local seen = cut and tonumber(string.sub(value, 1, cut - 1))
    if seen == nil or now - seen > stale then
      redis.call('HDEL', hkey, kv[i])
    else
      sessions[#sessions + 1] = value
    end
  end
  steps = steps + 1
until cursor == '0' or #sessions >= limit or steps >= MAX_STEPS

local out = { now, cursor, #sessions }
for _, value in ipairs(sessions) do out[#out + 1] = value end

local heads = {}
if want > 0 then
  for _, queue in ipairs(redis.call('ZRANGE', queue_registry(meta), 0, MAX_QUEUES - 1)) do
    local head = redis.call('ZRANGE', K.leased .. queue, 0, 0, 'WITHSCORES')
    if #head > 0 then
      heads[#heads + 1] = { queue = queue, at = 0, id = head[1], deadline = tonumber(head[2]) }
    end
  end
end
local leases = {}
while #leases < want * 4 and #heads > 0 do
  local best = 1
  for i = 2, #heads do
    if heads[i].deadline < heads[best].deadline then best = i end
  end
  local h = heads[best]
  local p = packed_load(K.job .. h.id)
  local worker = ''
  if type(p) == 'table' and not is_error(p) then worker = p[P_WORKER] or '' end
  leases[#leases + 1] = h.id
  leases[#leases + 1] = h.queue
  leases[#leases + 1] = worker
  leases[#leases + 1] = h.deadline
  h.at = h.at + 1
  local next = redis.call('ZRANGE', K.leased .. h.queue, h.at, h.at, 'WITHSCORES')
  if #next > 0 then
    h.id, h.deadline = next[1], tonumber(next[2])
  else
    table.remove(heads, best)
  end
end
out[#out + 1] = #leases / 4
for _, v in ipairs(leases) do out[#out + 1] = v end
return out
