#!lua flags=allow-oom
-- list_due_schedules: one page of a namespace's schedules by next run, from the due
-- index; optionally only the overdue ones (issue 14).
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- KEYS[4] due index <prefix>:{<ns>}:due
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

local due = KEYS[4]
local after_score, after_id = tonumber(ARGV[3]), ARGV[4]
local page, budget = tonumber(ARGV[6]), tonumber(ARGV[7])
local full, max_bytes = ARGV[8] == '1', tonumber(ARGV[9])
local max_score = nil
if ARGV[5] ~= '' then max_score = now_ms() - tonumber(ARGV[5]) end
local REPLY_FIXED = 256

-- Where the page starts: after the previous page's last entry.
local start, skip_ties = 0, false
if after_score then
  local rank = redis.call('ZRANK', due, after_id)
  if rank and tonumber(redis.call('ZSCORE', due, after_id)) == after_score then
    start = rank + 1
  else
    -- It moved or went: from the first entry at its score, skipping the ids at that
    -- score up to it.
    start = redis.call('ZCOUNT', due, '-inf', '(' .. after_score)
    skip_ties = true
  end
end

local entries = redis.call('ZRANGE', due, start, start + budget - 1, 'WITHSCORES')
local out, n, bytes = {}, 0, 0
local last_score, last_id, ended = '', '', false
for i = 1, #entries, 2 do
  local id, score = entries[i], tonumber(entries[i + 1])
  if max_score and score > max_score then
    ended = true -- past the overdue ones
    break
  end
  if not (skip_ties and score == after_score and id <= after_id) then
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
  -- The last entry of an index shorter than the call's window: nothing follows.
  if i + 1 >= #entries and #entries < 2 * budget then ended = true end
end
if ended then last_score, last_id = '', '' end
local result = { last_score, last_id, n }
for i = 1, #out do result[#result + 1] = out[i] end
return result
