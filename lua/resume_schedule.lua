-- resume_schedule: make a paused schedule active again, next run computed from now.
--
-- KEYS[1] due index   <prefix>:{<ns>}:due      KEYS[2] schedule record <prefix>:{<ns>}:s:<id>
-- KEYS[3] id listing  <prefix>:{<ns>}:ids      KEYS[4] namespace meta <prefix>:{<ns>}:meta
-- ARGV[1] id   ARGV[2] rev the caller computed from
-- ARGV[3] next run ms computed from now ("" = never)   ARGV[4] follow ms ("" | "end")
-- Returns: {} when missing; { "moved" } when rev changed since the caller read it (the
-- caller re-reads and retries); else { "ok", fields... }.
--
-- Invariant 2: optimistic compare-and-set on rev, so a next run computed from a stale
-- timing is never written. Invariant 1: status and index change together.
-- Resuming a schedule that is not paused changes nothing. Invariant 5: refused in a
-- namespace that needs Migrate; keeps the meta `indexed` count.

local refused = schema_guard(KEYS[4], KEYS[3])
if refused then return refused end
local r = sched_load(KEYS[2])
if s_is_error(r) then return r end
if r == nil then return {} end
if string.format('%d', r.rev) ~= ARGV[2] then return { 'moved' } end
if r.status == 'paused' then
  r.updated_ms = now_ms()
  if ARGV[3] == '' or (r.limit > 0 and r.runs >= r.limit) then
    r.status, r.next_ms, r.follow_ms = 'completed', '', ''
    redis.call('ZREM', KEYS[1], ARGV[1])
  else
    local follow = ARGV[4]
    if follow ~= 'end' then follow = tonumber(follow) or '' end
    r.status, r.next_ms, r.follow_ms = 'active', tonumber(ARGV[3]), follow
    redis.call('ZADD', KEYS[1], r.next_ms, ARGV[1])
    count_index(KEYS[4], false, true)
  end
  sched_save(KEYS[2], r)
end
local out = { 'ok' }
local fields = sched_fields(ARGV[1], r)
for i = 1, #fields do out[#out + 1] = fields[i] end
return out
