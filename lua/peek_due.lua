#!lua flags=allow-oom,no-writes
-- peek_due: what the per-namespace wake-up timer needs, in one call.
--
-- KEYS[1] due index <prefix>:{<ns>}:due
-- KEYS[2] occurrence leases <prefix>:{<ns>}:oleases
-- Returns { now ms, how many entries are due now (due schedules + expired occurrence
-- leases), earliest score of either ("" when both are empty) }.
--
-- Read-only. O(log N): ZCOUNT and ZRANGE 0 0 on two sorted sets. Invariant 7 (docs/DESIGN.md): now is
-- Redis TIME, so every replica's timer agrees on what is due.

local now = now_ms()
local due = redis.call('ZCOUNT', KEYS[1], '-inf', now) + redis.call('ZCOUNT', KEYS[2], '-inf', now)
local earliest = nil
for _, key in ipairs({ KEYS[1], KEYS[2] }) do
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if #first > 0 and (earliest == nil or tonumber(first[2]) < earliest) then
    earliest = tonumber(first[2])
  end
end
return { now, due, earliest or '' }
