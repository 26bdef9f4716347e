#!lua flags=allow-oom
-- set_follow: record the precomputed cron slot after a schedule's next run.
--
-- KEYS[1] namespace meta <prefix>:{<ns>}:meta   KEYS[2] the listing of schemas 1 and 2
--         <prefix>:{<ns>}:ids (the guard reads it)   KEYS[3] the listing's top <prefix>:{<ns>}:lt
-- ARGV[1] schedule_prefix: the record prefix <prefix>:{<ns>}:s:
-- ARGV[2] leaf_prefix: the listing leaf prefix <prefix>:{<ns>}:lk:
-- KEYS[4] the schedule record <prefix>:{<ns>}:s:<id>
-- ARGV[3] rev: the revision the caller computed from   ARGV[4] next_ms: the next run
--         it computed from
-- ARGV[5] follow: follow ms, or "end" when no slot follows
-- Returns 1 if written, 0 if the schedule moved meanwhile (nothing written).
--
-- Invariant 2 (docs/DESIGN.md: compare-and-set): follow_ms is only a shortcut for claim_due; it is
-- written only if rev and next_ms are still the ones it was computed from, and only
-- where it is missing. A lost write costs one extra round trip on the next claim,
-- never a wrong fire time. Invariant 5: refused in a namespace that needs Migrate.

local refused = schema_guard(KEYS[1], KEYS[2], KEYS[3])
if refused then return refused end
local r = sched_load(KEYS[4])
if is_error(r) then return r end
if r ~= nil and string.format('%d', r.rev) == ARGV[3] and r.next_ms == tonumber(ARGV[4])
    and r.status == 'active' and r.follow_ms == '' then
  local follow = ARGV[5]
  if follow ~= 'end' then follow = tonumber(follow) or '' end
  r.follow_ms = follow
  sched_save(KEYS[4], r)
  return 1
end
return 0
