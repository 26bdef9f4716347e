-- list_schedules: one page of a namespace's schedules in id order.
--
-- KEYS[1] id listing <prefix>:{<ns>}:ids (schema 3 lists in keys derived from it:
--         lib/schedule.lua listing_page)
-- KEYS[2] namespace meta <prefix>:{<ns>}:meta
-- ARGV[1] schedule key prefix  <prefix>:{<ns>}:s:
-- ARGV[2] exclusive lower bound id ("" = from the start)
-- ARGV[3] page size   ARGV[4] status filter ("" = any)
-- ARGV[5] most ids to examine in this call (bounds the work when filtering)
-- Returns: { next_after_id ("" = done), n, then for each schedule: field count, fields... }
--
-- Invariant 3: bounded by ARGV[5] ids per call, never a scan of the namespace.
-- Ids whose record vanished are dropped from the listing (repair). Invariant 5: refused
-- in a namespace that needs Migrate (its records are not packed yet, or not listed
-- this way); a key holding something other than a record ends the call with
-- DUEQ_CORRUPT naming it.

local refused = schema_guard(KEYS[2], KEYS[1])
if refused then return refused end

local page, filter, budget = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local ids = listing_page(KEYS[1], ARGV[2], budget)
local out, n, last = {}, 0, ''
for i = 1, #ids do
  local id = ids[i]
  last = id
  local r = sched_load(ARGV[1] .. id)
  if s_is_error(r) then return r end
  if r == nil then
    listing_remove(KEYS[1], KEYS[2], id)
  elseif filter == '' or r.status == filter then
    local fields = sched_fields(id, r)
    out[#out + 1] = #fields
    for j = 1, #fields do out[#out + 1] = fields[j] end
    n = n + 1
    if n >= page then break end
  end
end
local next_after = ''
if #ids > 0 and (n >= page or #ids >= budget) and last ~= '' then
  -- More may follow unless this was the namespace's last id.
  if #listing_page(KEYS[1], last, 1) > 0 then next_after = last end
end
local result = { next_after, n }
for i = 1, #out do result[#result + 1] = out[i] end
return result
