#!lua flags=allow-oom
-- list_flow_keys: a page of a queue's active flow keys (issue 32; lib/flow.lua).
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] queue: the queue
-- ARGV[10] order: "b" backlog | "c" running | "h" throttled until (most first)
-- ARGV[11] offset: keys of that order to skip (the page token)
-- ARGV[12] limit: most keys in the page (1-1000)
-- Returns { now, next offset ("" when no key follows), n, then per key 5 values:
--           key, backlog, running, throttled until (epoch ms, "" none), its own
--           limits (the overrides hash's text, "" none) }
--
-- Pages through one of the queue's key zsets (lib/flow.lua `b` ready jobs per key,
-- `c` leased jobs per concurrency key, `h` throttles) by ZREVRANGE from the offset;
-- each key's other two scores and its override are read with it. Only active keys
-- are stored, so only they are listed. Ended throttles are dropped first (as a
-- claim does). A page shifts when keys change between calls (an offset, not a
-- cursor). O(log K + limit). Invariant 5: refused while the namespace's jobs are in
-- an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local meta, queue, order = KEYS[2], ARGV[9], ARGV[10]
local offset, limit = tonumber(ARGV[11]), tonumber(ARGV[12])
local now = now_ms()
local bkey, ckey, hkey = flow.key(meta, 'b', queue), flow.key(meta, 'c', queue),
  flow.key(meta, 'h', queue)
redis.call('ZREMRANGEBYSCORE', hkey, '-inf', now)
local zset = ({ b = bkey, c = ckey, h = hkey })[order]
local keys = redis.call('ZREVRANGE', zset, offset, offset + limit)
local next_offset = ''
if #keys > limit then
  keys[#keys] = nil
  next_offset = offset + limit
end
local kkey = flow.key(meta, 'k', queue)
local out = { now, next_offset, #keys }
for _, key in ipairs(keys) do
  out[#out + 1] = key
  out[#out + 1] = tonumber(redis.call('ZSCORE', bkey, key) or '0') or 0
  out[#out + 1] = tonumber(redis.call('ZSCORE', ckey, key) or '0') or 0
  out[#out + 1] = redis.call('ZSCORE', hkey, key) or ''
  out[#out + 1] = redis.call('HGET', kkey, key) or ''
end
return out
