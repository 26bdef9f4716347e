-- peek_due: what the per-namespace wake-up timer needs, in one call.
--
-- KEYS[1] due index <prefix>:{<ns>}:due
-- Returns { now ms, how many entries are due now, earliest score ("" when empty) }.
--
-- Read-only. O(log N): ZCOUNT and ZRANGE 0 0 on a sorted set. Invariant 7: now is
-- Redis TIME, so every replica's timer agrees on what is due.

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local due = redis.call('ZCOUNT', KEYS[1], '-inf', now)
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local earliest = ''
if #first > 0 then earliest = first[2] end
return { now, due, earliest }
