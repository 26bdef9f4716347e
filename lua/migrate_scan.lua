-- migrate_scan: read one batch of schedule records for Migrate.
--
-- KEYS[1] the listing to walk: <prefix>:{<ns>}:ids (a SET in schema 1, a ZSET in
--         schema 2; schema 3 lists in keys derived from it, lib/schedule.lua)
-- ARGV[1] "set" | "zset" | "tree"   ARGV[2] cursor ("0" to start; for "tree", then
--         ">" and the last id read)   ARGV[3] batch size (SCAN COUNT, or ids read)
-- KEYS[2] due index <prefix>:{<ns>}:due (absent when reading an import source: no
--         scores, and its hashes are another queue's, read as they are)
-- ARGV[4] record key prefix: <prefix>:{<ns>}:s: (or the import source's)
-- Returns { next cursor ("0" = done), n, then per record: id, key type, due-index score
--           ("" none), state ("rev|status|next_ms|runs", see migrate_state; "" for an
--           import source), field count, fields... }. Fields: a hash's own (schema 1
--           and 2, or the import source's); a schema-3 record's, unpacked (none when
--           it does not unpack: Rust reports it).
--
-- Read-only. Invariant 3: one SSCAN/ZSCAN step or one listing page, bounded by the
-- batch size; Migrate
-- walks the namespace in many such calls. Records are validated in Rust (the same
-- timing code the service uses) and written back by migrate_apply, which re-checks
-- each record's state, so a record changed in between is never overwritten.

local scan
if ARGV[1] == 'set' then
  scan = redis.call('SSCAN', KEYS[1], ARGV[2], 'COUNT', ARGV[3])
elseif ARGV[1] == 'zset' then
  scan = redis.call('ZSCAN', KEYS[1], ARGV[2], 'COUNT', ARGV[3])
else
  local after = ''
  if ARGV[2] ~= '0' then after = string.sub(ARGV[2], 2) end
  local ids = listing_page(KEYS[1], after, tonumber(ARGV[3]))
  local cursor = '0'
  if #ids > 0 and #listing_page(KEYS[1], ids[#ids], 1) > 0 then cursor = '>' .. ids[#ids] end
  scan = { cursor, ids }
end
local step = 1
if ARGV[1] == 'zset' then step = 2 end -- ZSCAN returns member, score pairs
local out = { scan[1], 0 }
local items = scan[2]
for i = 1, #items, step do
  local id = items[i]
  local key = ARGV[4] .. id
  local kind = redis.call('TYPE', key)['ok']
  out[#out + 1] = id
  out[#out + 1] = kind
  local fields, state = {}, ''
  if kind == 'hash' then fields = redis.call('HGETALL', key) end
  if KEYS[2] then
    out[#out + 1] = redis.call('ZSCORE', KEYS[2], id) or ''
    if kind == 'hash' then
      state = migrate_state(sched_from_flat(fields))
    elseif kind == 'string' then
      local r = sched_load(key)
      if not s_is_error(r) then
        state = migrate_state(r)
        fields = sched_fields(id, r)
      end
    end
  else
    out[#out + 1] = ''
  end
  out[#out + 1] = state
  out[#out + 1] = #fields
  for j = 1, #fields do out[#out + 1] = fields[j] end
  out[2] = out[2] + 1
end
return out
