#!lua
-- migrate_scan: read one batch of schedule records for Migrate.
--
-- KEYS[1] the listing to walk: <prefix>:{<ns>}:ids (a SET in schema 1, a ZSET in
--         schema 2), schema 3's listing top <prefix>:{<ns>}:lt (lib/schedule.lua), or
--         an import source's SET of ids
-- KEYS[2..] the due index <prefix>:{<ns>}:due, when reading a namespace (an import
--         source has none: no scores, and its hashes are another queue's, read as
--         they are)
-- ARGV[1] record_prefix: record key prefix: <prefix>:{<ns>}:s: (or the import source's)
-- ARGV[2] leaf_prefix: listing leaf prefix <prefix>:{<ns>}:lk: ("" unless walking "tree")
-- ARGV[3] walk: "set" | "zset" | "tree"   ARGV[4] cursor: "0" to start (for "tree",
--         then ">" and the last id read)   ARGV[5] batch: batch size (SCAN COUNT, or
--         ids read)
-- Returns { next cursor ("0" = done), n, then per record: id, key type, due-index score
--           ("" none), state ("rev|status|next_ms|runs", see migrate_state; "" for an
--           import source), field count, fields... }. Fields: an import source's hash
--           as it is; a dueq record's (a schema-3 record unpacked, a schema 1 or 2
--           hash read through sched_from_flat) as sched_reply writes them, none when
--           it does not unpack (Rust reports it).
--
-- Read-only. Invariant 3 (docs/DESIGN.md): one SSCAN/ZSCAN step or one listing page, bounded by the
-- batch size; Migrate walks the namespace in many such calls. Records are validated
-- in Rust (the same timing code the service uses) and written back by migrate_apply,
-- which re-checks each record's state, so a record changed in between is never
-- overwritten.

local scan
if ARGV[3] == 'set' then
  scan = redis.call('SSCAN', KEYS[1], ARGV[4], 'COUNT', ARGV[5])
elseif ARGV[3] == 'zset' then
  scan = redis.call('ZSCAN', KEYS[1], ARGV[4], 'COUNT', ARGV[5])
else
  local L = listing_of(KEYS[1], ARGV[2], nil)
  local after = ''
  if ARGV[4] ~= '0' then after = string.sub(ARGV[4], 2) end
  local ids = listing_page(L, after, tonumber(ARGV[5]))
  local cursor = '0'
  if #ids > 0 and #listing_page(L, ids[#ids], 1) > 0 then cursor = '>' .. ids[#ids] end
  scan = { cursor, ids }
end
local step = 1
if ARGV[3] == 'zset' then step = 2 end -- ZSCAN returns member, score pairs
local out = { scan[1], 0 }
local items = scan[2]
for i = 1, #items, step do
  local id = items[i]
  local key = ARGV[1] .. id
  local kind = redis.call('TYPE', key)['ok']
  out[#out + 1] = id
  out[#out + 1] = kind
  local fields, state = {}, ''
  if kind == 'hash' then fields = redis.call('HGETALL', key) end
  if KEYS[2] then
    out[#out + 1] = redis.call('ZSCORE', KEYS[2], id) or ''
    if kind == 'hash' then
      -- A schema 1 or 2 hash, in the fields of the packed record (absent ones as
      -- sched_from_flat reads them), keeping its own id so Rust can check it.
      local own_id = ''
      for j = 1, #fields, 2 do
        if fields[j] == 'id' then own_id = fields[j + 1] end
      end
      local r = sched_from_flat(fields)
      state = migrate_state(r)
      fields = sched_reply(own_id, r)
    elseif kind == 'string' then
      local r = sched_load(key)
      if not is_error(r) then
        state = migrate_state(r)
        fields = sched_reply(id, r)
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
