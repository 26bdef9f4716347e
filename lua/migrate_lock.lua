#!lua flags=allow-oom
-- migrate_lock: the lease that keeps two Migrates off one namespace.
--
-- KEYS[1] lock <prefix>:{<ns>}:migrate_lock (string: holder token, with a TTL)
-- ARGV[1] op: "acquire" | "renew" | "release"   ARGV[2] token: the lock's token
-- ARGV[3] ttl_ms: ttl ms
-- Returns { "ok" } | { "held", remaining ttl ms } (acquire) | { "lost" } (renew/release
-- of a lock that is no longer ours).
--
-- Invariant 5 (docs/DESIGN.md: safe to run from two places at once): the lock is a lease. A holder that
-- dies stops renewing and the lock expires; every Migrate batch script re-checks the
-- token, so a holder whose lease lapsed cannot write after another took over.

local op, token, ttl = ARGV[1], ARGV[2], ARGV[3]
if op == 'acquire' then
  if redis.call('SET', KEYS[1], token, 'NX', 'PX', ttl) then return { 'ok' } end
  if redis.call('GET', KEYS[1]) == token then
    redis.call('PEXPIRE', KEYS[1], ttl)
    return { 'ok' }
  end
  return { 'held', redis.call('PTTL', KEYS[1]) }
end
if redis.call('GET', KEYS[1]) ~= token then return { 'lost' } end
if op == 'renew' then
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  redis.call('DEL', KEYS[1])
end
return { 'ok' }
