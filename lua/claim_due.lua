-- claim_due: hand the earliest due occurrence of a namespace to one caller.
--
-- KEYS[1] due index (zset id -> next run ms)   <prefix>:{<ns>}:due
-- KEYS[2] id listing <prefix>:{<ns>}:ids       KEYS[3] namespace meta <prefix>:{<ns>}:meta
-- ARGV[1] schedule key prefix                   <prefix>:{<ns>}:s:
-- ARGV[2] how many due candidates to examine at most (bounds the work per call)
-- ARGV[3..8] optional hint for a cron schedule the caller was asked to compute:
--   id, rev, expected next ms, new next ms ("" = none), new follow ms ("" | "end"),
--   skipped count. Empty ARGV[3] = no hint.
-- Returns one of:
--   { "claimed", now, due_ms, skipped, earliest, HGETALL... }  the claimed schedule after the claim
--   { "compute", now, earliest, id, rev, next_ms, HGETALL... }  a cron schedule whose next slot after
--        now must be computed by the caller (time zones live in Rust); nothing changed
--        except repairs
--   { "none", now, earliest }  nothing due
--   earliest = lowest score left in the index ("" when empty), for the wake-up timer.
--
-- Invariants kept:
-- * 1 (derived index): every candidate is re-validated against its hash (exists, active,
--   next run <= now, run limit not reached, not past end) and each stale entry met is
--   repaired: dangling, paused, completed ones removed; ones whose hash says later
--   re-scored. The claim itself (run count +1, last run = now, next run advanced) and
--   the index update happen in this one script.
-- * 3 (no O(N)): at most ARGV[2] candidates are read, by ZRANGEBYSCORE ... LIMIT.
-- * 4 (a crash never stalls): cron slots are computed in Rust, but this script only
--   ever moves a schedule from one valid next run to another. A hint is applied only
--   if rev and next_ms are still what the caller read, so a hint computed from old
--   timing or racing another claimer is refused. If the caller dies after "compute",
--   nothing was written: the schedule is still due and the next claimer computes it.
--   `follow_ms` (the slot after next_ms, precomputed) lets a cron claim finish in one
--   call; when it is missing or already past, the script asks instead of guessing.
-- * 7 (one clock): "now" is Redis TIME, never the caller's clock.
-- * 5: refused (lib/guard.lua) in a namespace that needs Migrate; every completion
--   decrements the meta `indexed` count.

local refused = schema_guard(KEYS[3], KEYS[2])
if refused then return refused end

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local due_key = KEYS[1]
local prefix = ARGV[1]
local max_candidates = tonumber(ARGV[2])
local MAX_SKIP = 100000

local function earliest()
  local first = redis.call('ZRANGE', due_key, 0, 0, 'WITHSCORES')
  if #first == 0 then return '' end
  return first[2]
end

local function complete(key, id)
  -- Only ever called on an active schedule with a next run: it leaves the index.
  redis.call('HSET', key, 'status', 'completed', 'next_ms', '', 'follow_ms', '')
  redis.call('ZREM', due_key, id)
  count_index(KEYS[3], true, false)
end

-- Record the claim; new_next nil means there is no later slot.
local function claim(key, id, due_ms, new_next, new_follow, skipped)
  local runs = redis.call('HINCRBY', key, 'runs', 1)
  redis.call('HSET', key, 'last_ms', now)
  local limit = tonumber(redis.call('HGET', key, 'limit')) or 0
  if new_next == nil or (limit > 0 and runs >= limit) then
    complete(key, id)
  else
    redis.call('HSET', key, 'next_ms', new_next, 'follow_ms', new_follow)
    redis.call('ZADD', due_key, new_next, id)
  end
  local out = { 'claimed', now, due_ms, skipped, earliest() }
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields do out[#out + 1] = fields[i] end
  return out
end

-- Validate one candidate; returns the hash fields it needs when it is claimable now,
-- or nil after repairing its index entry.
local function validate(id, score)
  local key = prefix .. id
  local h = redis.call('HMGET', key, 'status', 'next_ms', 'runs', 'limit', 'end_ms', 'kind')
  local status, next_ms = h[1], tonumber(h[2])
  if not status then
    redis.call('ZREM', due_key, id) -- dangling id
    return nil
  end
  if status ~= 'active' or next_ms == nil then
    redis.call('ZREM', due_key, id) -- paused / completed / no next run
    return nil
  end
  local runs, limit, end_ms = tonumber(h[3]) or 0, tonumber(h[4]) or 0, tonumber(h[5])
  if (limit > 0 and runs >= limit) or (end_ms and next_ms > end_ms) then
    complete(key, id)
    return nil
  end
  if next_ms > now then
    redis.call('ZADD', due_key, next_ms, id) -- stale score: the hash says later
    return nil
  end
  if tonumber(score) ~= next_ms then
    redis.call('ZADD', due_key, next_ms, id)
  end
  return { key = key, next_ms = next_ms, end_ms = end_ms, kind = h[6] }
end

-- 1. A hint from a previous "compute" answer: re-check that nothing moved.
if ARGV[3] and ARGV[3] ~= '' then
  local id = ARGV[3]
  local c = validate(id, redis.call('ZSCORE', due_key, id) or -1)
  if c and c.kind == 'cron'
      and redis.call('HGET', c.key, 'rev') == ARGV[4]
      and c.next_ms == tonumber(ARGV[5]) then
    local new_next = tonumber(ARGV[6])
    return claim(c.key, id, c.next_ms, new_next, ARGV[7], tonumber(ARGV[8]) or 0)
  end
end

-- 2. The earliest due candidates, in score order.
local cands = redis.call('ZRANGEBYSCORE', due_key, '-inf', now, 'WITHSCORES', 'LIMIT', 0, max_candidates)
for i = 1, #cands, 2 do
  local id = cands[i]
  local c = validate(id, cands[i + 1])
  if c then
    if c.kind == 'every' then
      local every = tonumber(redis.call('HGET', c.key, 'every_ms'))
      local missed = math.floor((now - c.next_ms) / every)
      local new_next = c.next_ms + (missed + 1) * every
      if c.end_ms and new_next > c.end_ms then new_next = nil end
      return claim(c.key, id, c.next_ms, new_next, '', math.min(missed, MAX_SKIP))
    end
    local follow = redis.call('HGET', c.key, 'follow_ms')
    if follow == 'end' then
      return claim(c.key, id, c.next_ms, nil, '', 0)
    end
    local follow_ms = tonumber(follow)
    if follow_ms and follow_ms > now then
      return claim(c.key, id, c.next_ms, follow_ms, '', 0)
    end
    local out = { 'compute', now, earliest(), id, redis.call('HGET', c.key, 'rev'), c.next_ms }
    local fields = redis.call('HGETALL', c.key)
    for j = 1, #fields do out[#out + 1] = fields[j] end
    return out
  end
end

return { 'none', now, earliest() }
