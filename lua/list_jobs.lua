-- list_jobs: one page of a queue's jobs in enqueue order.
--
-- KEYS[1] the queue's listing (zset id -> seq)   <prefix>:{<ns>}:qj:<queue>
-- ARGV[1] job key prefix   <prefix>:{<ns>}:j:
-- ARGV[2] exclusive lower bound seq ("" = from the start)
-- ARGV[3] page size   ARGV[4] state filter ("" = any)
-- ARGV[5] most ids to examine in this call (bounds the work when filtering)
-- Returns { next_after_seq ("" = done), n, then per job: field count, fields... }
--
-- Invariant 3: bounded by ARGV[5] ids per call, never a scan of the queue. Ids whose
-- hash vanished (pruned) are dropped from the listing (repair).

local from = '-inf'
if ARGV[2] ~= '' then from = '(' .. ARGV[2] end
local page, filter, budget = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], from, '+inf', 'WITHSCORES', 'LIMIT', 0, budget)
local out, n, last = {}, 0, ''
for i = 1, #ids, 2 do
  local id = ids[i]
  last = ids[i + 1]
  local fields = redis.call('HGETALL', ARGV[1] .. id)
  if #fields == 0 then
    redis.call('ZREM', KEYS[1], id)
  else
    local state = ''
    for j = 1, #fields, 2 do
      if fields[j] == 'state' then state = fields[j + 1] end
    end
    if filter == '' or state == filter then
      out[#out + 1] = #fields
      for j = 1, #fields do out[#out + 1] = fields[j] end
      n = n + 1
      if n >= page then break end
    end
  end
end
local next_after = ''
if #ids > 0 and (n >= page or #ids / 2 >= budget) and last ~= '' then
  if #redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. last, '+inf', 'LIMIT', 0, 1) > 0 then
    next_after = last
  end
end
local result = { next_after, n }
for i = 1, #out do result[#result + 1] = out[i] end
return result
