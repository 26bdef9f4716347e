#!lua flags=allow-oom,no-writes
-- list_audit: a page of a namespace's audit log, newest first (issue 33).
--
-- KEYS[1] the audit log (stream)   <prefix>:{<ns>}:meta:audit
-- ARGV[1] before: the id of the last record of the previous page ("" for the newest)
-- ARGV[2] limit: most records in the page (1-1000)
-- Returns { more (1 when older records follow), n, then per record 6 values: its
--           id (ms-seq, the time it was appended by the Redis clock), principal,
--           method, target, outcome, via }
--
-- Read-only: XREVRANGE from before (exclusive) for limit + 1 entries,
-- O(log N + limit). A record missing a field (written by hand) reads as ''.

local key, before, limit = KEYS[1], ARGV[1], tonumber(ARGV[2])
local from = '+'
if before ~= '' then from = '(' .. before end
local entries = redis.call('XREVRANGE', key, from, '-', 'COUNT', limit + 1)
local more = 0
if #entries > limit then
  entries[#entries] = nil
  more = 1
end
local out = { more, #entries }
for _, entry in ipairs(entries) do
  local f = {}
  local kv = entry[2]
  for i = 1, #kv, 2 do f[kv[i]] = kv[i + 1] end
  out[#out + 1] = entry[1]
  out[#out + 1] = f.p or ''
  out[#out + 1] = f.m or ''
  out[#out + 1] = f.t or ''
  out[#out + 1] = f.o or ''
  out[#out + 1] = f.v or ''
end
return out
