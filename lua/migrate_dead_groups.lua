#!lua
-- migrate_dead_groups: Migrate's indexing of dead jobs into their error groups (issue
-- 33, lib/job.lua dg), one bounded step per call; a dry run counts the dead jobs it
-- would index and writes nothing.
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- KEYS[3] lock                                    <prefix>:{<ns>}:migrate_lock
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] token: lock token   ARGV[10] dry_run: "1" = dry run (write nothing)
-- ARGV[11] queue: the cursor's queue ("" = from the first queue)
-- ARGV[12] score: the cursor's dead ms in that queue ("" = from its first dead job)
-- ARGV[13] skip: the jobs of that score already visited
-- ARGV[14] batch: most dead-set entries per call
-- Returns { "ok", done (1 once every queue was visited), queue, score, skip (the
--           next cursor), visited, indexed }
--       | { "lost" } (the Migrate lock is not ours: nothing written)
--
-- The queues are the namespace's registry (meta:queues, by name), each one's dead set
-- walked by dead ms. A dead job in no group (it died before the groups existed) is
-- indexed: it joins its group with its dead ms (dg.add; the group's sample is set
-- only when it has none). One in a group already is left alone, so the step is
-- idempotent and two runs at once index a job once. At most `batch` entries and 100
-- queue names per call (invariant 3); a dry run takes no lock and writes nothing;
-- invariant 5: refused while the jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local dry = ARGV[10] == '1'
if not dry and redis.call('GET', KEYS[3]) ~= ARGV[9] then return { 'lost' } end
local K = job_keys(ARGV, 1)
local meta = KEYS[2]
local queue, score, skip = ARGV[11], ARGV[12], tonumber(ARGV[13]) or 0
local batch = math.max(tonumber(ARGV[14]) or 1, 1)
local QUEUES = 100
local visited, indexed = 0, 0

local from = '-'
if queue ~= '' then from = '[' .. queue end
local names = redis.call('ZRANGE', queue_registry(meta), from, '+', 'BYLEX', 'LIMIT', 0, QUEUES)
for i, q in ipairs(names) do
  if q ~= queue then score, skip = '', 0 end
  queue = q
  local min = '-inf'
  if score ~= '' then min = score end
  local entries = redis.call('ZRANGEBYSCORE', queue_dead(meta, q), min, '+inf', 'WITHSCORES',
    'LIMIT', skip, batch - visited)
  for k = 1, #entries, 2 do
    local id, at = entries[k], entries[k + 1]
    visited = visited + 1
    if at == score then skip = skip + 1 else score, skip = at, 1 end
    local r = job_load(K.job .. id)
    if r and not is_error(r) and r.state == 'dead' and r.queue == q and not dg.of(meta, id, r) then
      indexed = indexed + 1
      if not dry then dg.add(meta, id, r, tonumber(at), true) end
    end
  end
  if visited >= batch then
    return { 'ok', 0, queue, score, skip, visited, indexed }
  end
  -- This queue is done: the next call starts after it.
  if i == #names and #names == QUEUES then
    return { 'ok', 0, q .. '\0', '', 0, visited, indexed }
  end
end
return { 'ok', 1, '', '', 0, visited, indexed }
