-- set_follow: record the precomputed cron slot after a schedule's next run.
--
-- KEYS[1] schedule hash   <prefix>:{<ns>}:s:<id>
-- ARGV[1] rev the caller computed from   ARGV[2] next_ms it computed from
-- ARGV[3] follow ms, or "end" when no slot follows
-- Returns 1 if written, 0 if the schedule moved meanwhile (nothing written).
--
-- Invariant 2 (compare-and-set): follow_ms is only a shortcut for claim_due; it is
-- written only if rev and next_ms are still the ones it was computed from, and only
-- where it is missing. A lost write costs one extra round trip on the next claim,
-- never a wrong fire time.

local h = redis.call('HMGET', KEYS[1], 'rev', 'next_ms', 'follow_ms', 'status')
if h[1] == ARGV[1] and h[2] == ARGV[2] and h[4] == 'active' and (h[3] == false or h[3] == '') then
  redis.call('HSET', KEYS[1], 'follow_ms', ARGV[3])
  return 1
end
return 0
