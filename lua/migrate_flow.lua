#!lua
-- migrate_flow: Migrate's check and repair of the flow-control indexes (issue 32,
-- lib/flow.lua) of one queue, one bounded step per call; a dry run counts what it
-- would repair and writes nothing.
--
-- KEYS[1] finished jobs (unused; every job script gets the same keys)
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- KEYS[3] lock                                    <prefix>:{<ns>}:migrate_lock
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] token: lock token   ARGV[10] dry_run: "1" = dry run (write nothing)
-- ARGV[11] mode: the step (below)   ARGV[12] queue: the queue ("" for "survey")
-- ARGV[13] cursor: mode "jobs": the next job number to visit
-- ARGV[14] batch: mode "jobs": most job numbers per call; mode "slots": most leases
-- ARGV[15..] items: mode "survey": queue names; mode "places": pairs of kind ("l" a
--            lane, "w" a concurrency key's park) and its name; else none
-- Modes:
--   "survey" per queue in items: 1 if it has flow state to check (field `fl` of its
--            state hash: it had a lane; or a round-robin or weighted policy), else 0
--   "slots"  the running slots (zset 'c') recounted from the queue's lease set: each
--            key's count set to its active jobs leased now, keys with none removed,
--            and the lanes parked on a recounted key put back when it has room;
--            refused (a problem, nothing written) above `batch` leases
--            ("places" skips the parks of the keys recounted here: a dry run could
--            not judge them by the count it did not write)
--   "jobs"   job numbers cursor.. of the queue (at most `batch`): each pending job
--            that waits in a lane (a flow key, or any job of a round-robin or
--            weighted queue) is in its lane, and its lane is in a place
--   "places" each lane given that holds entries is in a place (rotation, a park or
--            the time park) else enters the rotation; each concurrency key given
--            whose park holds lanes and that is below its limit gives them back
--            (lanes parked on a key with a free slot wait for a finish that may
--            never come)
-- Returns { "ok", next (mode "jobs": the next cursor, -1 once done; else 0),
--           visited, repaired, problem ("" none), then: mode "survey": a flag per
--           queue; modes "jobs" and "places": the lanes found in no place; mode
--           "slots": the keys whose count was wrong }
--       | { "lost" } (the Migrate lock is not ours: nothing written)
--
-- Invariants (docs/DESIGN.md): 1 (derived indexes): every index is rebuilt from the
-- job records, each job judged by the state it has in this call, so traffic between
-- two calls is never undone (a lane entry stands for a pending job; a slot for an
-- active lease, recounted in one call); 3: O(batch) per call ("slots": O(leases),
-- refused above the bound); 5: refused while the jobs are in an older layout; a dry
-- run takes no lock and writes nothing.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local dry, mode = ARGV[10] == '1', ARGV[11]
if not dry and redis.call('GET', KEYS[3]) ~= ARGV[9] then return { 'lost' } end
local meta = KEYS[2]
local K = job_keys(ARGV, 1)
local q, cursor, batch = ARGV[12], tonumber(ARGV[13]) or 0, tonumber(ARGV[14]) or 1
local items = {}
for i = 15, #ARGV do items[#items + 1] = ARGV[i] end

if mode == 'survey' then
  local out = { 'ok', 0, #items, 0, '' }
  for _, name in ipairs(items) do
    local got = redis.call('HMGET', queue_state(meta, name), 'fl', 'flow')
    local pol = flow.parse(got[2])
    out[#out + 1] = (got[1] == '1' or pol.fair ~= 'f') and 1 or 0
  end
  return out
end

local pol = flow.policy(meta, q)

-- Where lane L (concurrency key c) is: 'r' | 'p' (a rotation), 't' (parked until a
-- time), 'w' (parked on its key), or nil.
local function place(L, c)
  if redis.call('ZSCORE', flow.key(meta, 'r', q), L) then return 'r' end
  if redis.call('ZSCORE', flow.key(meta, 'p', q), L) then return 'p' end
  if redis.call('ZSCORE', flow.key(meta, 't', q), L) then return 't' end
  if c ~= '' and redis.call('SISMEMBER', flow.key(meta, 'w', q, c), L) == 1 then
    return 'w'
  end
  return nil
end

-- The state lib/flow.lua flow.limits reads for the queue.
local function flow_state()
  return { meta = meta, q = q, pol = pol, override_cache = {},
    overrides = redis.call('EXISTS', flow.key(meta, 'k', q)) == 1 }
end

-- The lanes parked on concurrency key c, which has `running` jobs leased, go back to
-- the rotation when c is below its limit (a slot is free, so no finish may come to
-- wake them). -> how many.
local function unpark(F, c, running)
  local wkey = flow.key(meta, 'w', q, c)
  local parked = redis.call('SCARD', wkey)
  if parked == 0 then return 0 end
  local mr = flow.limits(F, c)
  if mr > 0 and running >= mr then return 0 end
  if not dry then
    for _, L in ipairs(redis.call('SPOP', wkey, parked)) do flow.enter(meta, q, pol, L) end
    redis.call('SREM', flow.key(meta, 'W', q), c)
  end
  return parked
end

if mode == 'slots' then
  -- The queue state's marks (lib/flow.lua fk, fh, fm), set again when their index
  -- is there: a lost mark would hide key overrides, throttles or a fairness change
  -- from the claims.
  if not dry then
    local state = queue_state(meta, q)
    for mark, kind in pairs({ fk = 'k', fh = 'h' }) do
      if redis.call('EXISTS', flow.key(meta, kind, q)) == 1 then redis.call('HSET', state, mark, '1') end
    end
    if redis.call('EXISTS', flow.key(meta, (pol.fair == 'f') and 'p' or 'r', q)) == 1 then
      redis.call('HSET', state, 'fm', '1')
    end
  end
  local lkey = K.leased .. q
  local leased = redis.call('ZCARD', lkey)
  if leased > batch then
    return { 'ok', 0, 0, 0, string.format('%d leases: over the %d one call recounts', leased,
      batch) }
  end
  -- The slots held: active jobs of the queue with a concurrency key, each lease once
  -- (as the claim's reclaim gives a slot back: lib/flow.lua flow.finish).
  local want = {}
  for _, id in ipairs(redis.call('ZRANGE', lkey, 0, -1)) do
    local p = packed_load(K.job .. id)
    if p and not is_error(p) and p[P_STATE] == STATE_CODE.active and p[P_QUEUE] == q
        and (p[P_LEASE_UNTIL] or '') ~= '' and (p[P_CKEY] or '') ~= '' then
      want[p[P_CKEY]] = (want[p[P_CKEY]] or 0) + 1
    end
  end
  local ckey = flow.key(meta, 'c', q)
  local have = {}
  local flat = redis.call('ZRANGE', ckey, 0, -1, 'WITHSCORES')
  for i = 1, #flat, 2 do have[flat[i]] = tonumber(flat[i + 1]) end
  local out = { 'ok', 0, leased, 0, '' }
  local F = flow_state()
  -- A key whose count changed: set, and its parked lanes back when it has room now.
  local function recount(key, n)
    out[4] = out[4] + 1 + unpark(F, key, n)
    out[#out + 1] = key
    if dry then return end
    if n > 0 then
      redis.call('ZADD', ckey, string.format('%d', n), key)
    else
      redis.call('ZREM', ckey, key)
    end
  end
  for key, n in pairs(want) do
    if have[key] ~= n then recount(key, n) end
  end
  for key, _ in pairs(have) do
    if want[key] == nil then recount(key, 0) end
  end
  return out
end

local out = { 'ok', 0, 0, 0, '' }
local repaired, visited = 0, 0

-- Lane L holds entries: it takes its place in the rotation when it has none (listed
-- in the reply, so a lane counts once however many calls meet it); a FIFO lane
-- already in it is rescored to its head.
local function ensure_place(L, c)
  local at = place(L, c)
  if at == nil then
    out[#out + 1] = L
    if not dry then flow.enter(meta, q, pol, L) end
  elseif at == 'r' and pol.fair == 'f' and not dry then
    flow.enter(meta, q, pol, L)
  end
end

if mode == 'jobs' then
  local turns = pol.fair ~= 'f'
  local last = tonumber(redis.call('HGET', meta, 'n:' .. q)) or 0
  local touched = {}
  while cursor <= last and visited < batch do
    local bucket = math.floor(cursor / LISTING_BUCKET)
    local fields = redis.call('HGETALL', listing_bucket(K, q, cursor))
    for i = 1, #fields, 2 do
      local n = bucket * LISTING_BUCKET + tonumber(fields[i])
      if n >= cursor then
        visited = visited + 1
        local p = packed_load(K.job .. fields[i + 1])
        if p and not is_error(p) and p[P_STATE] == STATE_CODE.pending and p[P_QUEUE] == q
            and p[P_N] == n then
          local f, c, r = p[P_FKEY] or '', p[P_CKEY] or '', p[P_RKEY] or ''
          local keyless = f == '' and c == '' and r == ''
          -- A keyless job of a queue that takes turns waits in lane "0:0:", or in a
          -- plain ready list when it became ready before the policy changed: one
          -- whose priority still has a plain list is not judged (finding it there
          -- would cost the list's length).
          if not keyless or (turns
              and redis.call('EXISTS', ready_list(K, q, p[P_PRIORITY])) == 0) then
            local L = flow.lane(f, c, r)
            local lkey = flow.key(meta, 'l', q, L)
            if not redis.call('ZSCORE', lkey, flow.member(n)) then
              repaired = repaired + 1
              -- Not added to the backlog (zset 'b'): it counted the entry, which
              -- was lost without a transition taking it off.
              if not dry then
                redis.call('ZADD', lkey, -p[P_PRIORITY], flow.member(n))
                redis.call('HSET', queue_state(meta, q), 'fl', '1')
              end
              if not touched[L] then
                touched[L] = true
                ensure_place(L, c)
              elseif not dry and pol.fair == 'f' then
                -- A FIFO lane's place follows its head, as flow.ready keeps it.
                redis.call('ZADD', flow.key(meta, 'r', q), 'XX', 'LT',
                  flow.fifo(p[P_PRIORITY], n), L)
              end
            end
          end
        end
      end
    end
    cursor = (bucket + 1) * LISTING_BUCKET
    visited = visited + 1 -- an empty bucket costs a call too
  end
  out[2] = (cursor > last) and -1 or cursor
  out[3], out[4] = visited, repaired
  return out
end

if mode == 'places' then
  local F = flow_state()
  for i = 1, #items - 1, 2 do
    local kind, name = items[i], items[i + 1]
    visited = visited + 1
    if kind == 'l' then
      if redis.call('EXISTS', flow.key(meta, 'l', q, name)) == 1 then
        local _, c = flow.lane_keys(name)
        ensure_place(name, c)
      end
    elseif kind == 'w' then
      local running = tonumber(redis.call('ZSCORE', flow.key(meta, 'c', q), name) or '0')
      local back = unpark(F, name, running)
      repaired = repaired + back
      -- A key that keeps its parked lanes is listed where PurgeJobs and the claims'
      -- sampling find it (lib/flow.lua `W`), in case that list was lost.
      if back == 0 and not dry then redis.call('SADD', flow.key(meta, 'W', q), name) end
    end
  end
  out[3], out[4] = visited, repaired
  return out
end

return redis.error_reply('DUEQ_BAD_MODE ' .. mode)
