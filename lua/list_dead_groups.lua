#!lua flags=allow-oom,no-writes
-- list_dead_groups: a page of a namespace's dead jobs grouped by error (issue 33,
-- lib/job.lua dg), the largest group first.
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta   <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] queue: only this queue's groups ("" = every queue of the namespace)
-- ARGV[10] offset: groups to skip (the page token)   ARGV[11] limit: most groups
-- Returns { more (1 if groups follow this page), n, then per group: fingerprint,
--           queue, count, first seen ms, last seen ms, sample job id, sample message }
--
-- Groups come in the order of dg.order (count, largest first; among equal counts by
-- name, descending), read by rank. Count, first and last seen are read from the
-- group's own set (its size, its lowest and highest score), so they are exact;
-- the sample is the last job that joined the group (it may have left it since).
-- Read-only; per group O(log N); the page is bounded by the caller (at most 1,000).
-- Invariant 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local meta = KEYS[2]
local queue, offset, limit = ARGV[9], tonumber(ARGV[10]), tonumber(ARGV[11])
local fields = redis.call('ZREVRANGE', dg.order(meta, queue), offset, offset + limit)
local more = 0
if #fields > limit then
  more = 1
  fields[#fields] = nil
end
local out = { more, #fields }
local groups = dg.groups(meta)
for _, field in ipairs(fields) do
  local cut = string.find(field, ':', 1, true)
  local fp, q = string.sub(field, 1, cut - 1), string.sub(field, cut + 1)
  local set = dg.set(meta, fp, q)
  local first = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
  local last = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  local sample = { '', '' }
  local packed = redis.call('HGET', groups, field)
  if packed then
    local ok, decoded = pcall(cmsgpack.unpack, packed)
    if ok and type(decoded) == 'table' then sample = decoded end
  end
  out[#out + 1] = fp
  out[#out + 1] = q
  out[#out + 1] = redis.call('ZCARD', set)
  out[#out + 1] = first[2] or ''
  out[#out + 1] = last[2] or ''
  out[#out + 1] = sample[1] or ''
  out[#out + 1] = sample[2] or ''
end
return out
