#!lua flags=allow-oom
-- list_due_schedules: one page of a namespace's schedules by next run, from the due
-- index; optionally only the overdue ones (issue 14).
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- KEYS[4] due index <prefix>:{<ns>}:due
-- KEYS[5] target index <prefix>:{<ns>}:due:t (target schedules, issue 30): the page is
--         the two indexes merged in (next run, id) order
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix (unused)
-- ARGV[3] after_ms: next run (ms) of the last schedule of the previous page ("" = from
--         the start)
-- ARGV[4] after_id: its id
-- ARGV[5] overdue_by_ms: only next runs at or before Redis TIME minus this ("" = all)
-- ARGV[6] page_size: page size   ARGV[7] budget: most index entries to examine in
--         this call
-- ARGV[8] full: "1" = the full view (payload and headers); "" = basic (both left empty)
-- ARGV[9] max_bytes: reply byte budget: the page ends before the schedule that would take its
--         schedules' bytes over it (a page holds at least one schedule)
-- Returns: { next run of the last entry examined ("" = done), its id, n,
--            then for each schedule: field count, fields (lib/schedule.lua
--            sched_reply)... }
--
-- Read-only. Invariant 1: the index only says which ids might be due; each entry is
-- re-validated against its record (its derived score, sched_due_at, equal to the
-- entry's: active, and a jittered next run or a waiting trigger, buffered or backfilled
-- occurrence counts) and a stale one is skipped (the claims repair it). Invariant 3: the page starts in O(log N)
-- (ZRANK of the previous page's last id, or ZCOUNT below its score when it moved)
-- and examines at most ARGV[7] entries. Invariant 7: "overdue" is judged by Redis
-- TIME. Invariant 9: bounded by ARGV[9] bytes and ARGV[6] schedules.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end

local after_score, after_id = tonumber(ARGV[3]), ARGV[4]
local page, budget = tonumber(ARGV[6]), tonumber(ARGV[7])
local full, max_bytes = ARGV[8] == '1', tonumber(ARGV[9])
local max_score = nil
if ARGV[5] ~= '' then max_score = now_ms() - tonumber(ARGV[5]) end
local REPLY_FIXED = 256

-- One index's entries after the previous page's last entry (after_score, after_id),
-- at most `budget`: from just after it when it is still there at that score, else from
-- the first entry at its score, skipping the ids at that score up to it.
local function window(index)
  local start, skip_ties = 0, false
  if after_score then
    local rank = redis.call('ZRANK', index, after_id)
    if rank and tonumber(redis.call('ZSCORE', index, after_id)) == after_score then
      start = rank + 1
    else
      start = redis.call('ZCOUNT', index, '-inf', '(' .. after_score)
      skip_ties = true
    end
  end
  local got = redis.call('ZRANGE', index, start, start + budget - 1, 'WITHSCORES')
  local w = { full = #got == 2 * budget }
  for i = 1, #got, 2 do
    local score = tonumber(got[i + 1])
    if not (skip_ties and score == after_score and got[i] <= after_id) then
      w[#w + 1] = { got[i], score }
    end
  end
  return w
end

-- The two windows merged in (score, id) order, as far as both are known: an index
-- whose window is full may hold more past its last entry, so the merge stops there.
local function merged(a, b)
  local entries, i, j = {}, 1, 1
  while i <= #a or j <= #b do
    local take_a
    if i > #a then
      if a.full then break end
      take_a = false
    elseif j > #b then
      if b.full then break end
      take_a = true
    else
      take_a = a[i][2] < b[j][2] or (a[i][2] == b[j][2] and a[i][1] < b[j][1])
    end
    if take_a then
      entries[#entries + 1] = a[i]
      i = i + 1
    else
      entries[#entries + 1] = b[j]
      j = j + 1
    end
  end
  return entries, a.full or b.full
end

local entries, more = merged(window(KEYS[4]), window(KEYS[5]))
local out, n, bytes = {}, 0, 0
local last_score, last_id, ended = '', '', false
for i = 1, #entries do
  local id, score = entries[i][1], entries[i][2]
  if max_score and score > max_score then
    ended = true -- past the overdue ones
    break
  end
  do
    local r = sched_load(ARGV[1] .. id)
    if is_error(r) then return r end
    if r ~= nil and sched_due_at(r) == score then
      if not full then r.payload, r.headers = '', '' end
      local fields = sched_reply(id, r)
      bytes = bytes + REPLY_FIXED
      for j = 4, #fields, 2 do bytes = bytes + #fields[j] end -- past the marker
      if n > 0 and bytes > max_bytes then
        break -- this schedule opens the next page
      end
      out[#out + 1] = #fields
      for j = 1, #fields do out[#out + 1] = fields[j] end
      n = n + 1
    end
  end
  last_score, last_id = score, id
  if n >= page then break end
  -- The last entry, and neither index's window was full: nothing follows.
  if i >= #entries and not more then ended = true end
end
if ended then last_score, last_id = '', '' end
local result = { last_score, last_id, n }
for i = 1, #out do result[#result + 1] = out[i] end
return result
