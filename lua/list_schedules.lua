#!lua flags=allow-oom
-- list_schedules: one page of a namespace's schedules in id order.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- ARGV[3] after: exclusive lower bound id ("" = from the start)
-- ARGV[4] page_size: page size   ARGV[5] status: status filter ("" = any)
-- ARGV[6] budget: most ids to examine in this call (bounds the work when filtering)
-- ARGV[7] full: "1" = the full view (payload and headers); "" = basic (both left empty)
-- ARGV[8] max_bytes: reply byte budget: the page ends before the schedule that would take its
--         schedules' bytes over it (a page holds at least one schedule)
-- Returns: { next_after_id ("" = done), n, then for each schedule: field count, fields
--          (lib/schedule.lua sched_reply)... }
--
-- Invariant 3 (docs/DESIGN.md): bounded by ARGV[6] ids per call, never a scan of the namespace.
-- Ids whose record vanished are dropped from the listing (repair). Invariant 5: refused
-- in a namespace that needs Migrate (its records are not packed yet, or not listed
-- this way); a key holding something other than a record ends the call with
-- DUEQ_CORRUPT naming it. Invariant 9: the reply is bounded by ARGV[8] bytes as well
-- as ARGV[4] schedules.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end

local L = listing_of(KEYS[3], ARGV[2], KEYS[1])
local page, filter, budget = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local full, max_bytes = ARGV[7] == '1', tonumber(ARGV[8])
-- Bytes a schedule's reply takes beyond its fields' text: field names and framing.
local REPLY_FIXED = 256
local ids = listing_page(L, ARGV[3], budget)
local out, n, last, bytes, cut = {}, 0, '', 0, false
for i = 1, #ids do
  local id = ids[i]
  local r = sched_load(ARGV[1] .. id)
  if is_error(r) then return r end
  if r == nil then
    listing_remove(L, id)
  elseif filter == '' or r.status == filter then
    if not full then r.payload, r.headers = '', '' end
    local fields = sched_reply(id, r)
    bytes = bytes + REPLY_FIXED
    for j = 4, #fields, 2 do bytes = bytes + #fields[j] end -- past the marker
    if n > 0 and bytes > max_bytes then
      cut = true -- this schedule opens the next page
      break
    end
    out[#out + 1] = #fields
    for j = 1, #fields do out[#out + 1] = fields[j] end
    n = n + 1
  end
  last = id
  if n >= page then break end
end
local next_after = ''
if cut then
  next_after = last
elseif #ids > 0 and (n >= page or #ids >= budget) and last ~= '' then
  -- More may follow unless this was the namespace's last id.
  if #listing_page(L, last, 1) > 0 then next_after = last end
end
local result = { next_after, n }
for i = 1, #out do result[#result + 1] = out[i] end
return result
