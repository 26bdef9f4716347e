#!lua flags=allow-oom
-- extend_lease: push a claimed job's lease deadline to now + lease, and/or store the
-- worker's progress report, if the caller still holds the lease (issue 30: one
-- script call for both).
--
-- KEYS[1] finished jobs (unused; every lease-guarded script gets the same keys)
-- KEYS[2] namespace meta   <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: job id   ARGV[10] token: lease token
-- ARGV[11] lease_ms: lease ms ("" = leave the deadline where it is)
-- ARGV[12] progress: "1" = a progress report follows (progress_at = now), "" = none
-- ARGV[13] fraction: the report's fraction ("" = keep the stored one)
-- ARGV[14] message_set: "1" = ARGV[15] replaces the stored message ("" = keep it)
-- ARGV[15] message: the message (empty clears it)
-- ARGV[16] checkpoint_set: "1" = ARGV[17] replaces the stored checkpoint
-- ARGV[17] checkpoint: the checkpoint (empty clears it)
-- Returns { "ok", deadline, cancel (1: CancelJob asked the worker to stop) }
--       | { "missing" } | { "stale", state } | { "expired" }
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 4: only the current token of an unexpired lease extends it or reports progress;
--   an expired lease cannot be revived (the job may already be re-handed).
-- * 1: the lease set's score follows the record's deadline, in the same script.
-- * 8: the service validated the report (fraction in 0..1, sizes); a refused lease
--   writes nothing.
-- * 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local id = ARGV[9]
local key = K.job .. id
local p = packed_load(key)
if p == nil then return { 'missing' } end
if is_error(p) then return p end
local created = p[P_CREATED]
local refusal = lease_refusal(STATE_NAME[p[P_STATE]], p[P_TOKEN] or '',
  rel_in(p[P_LEASE_UNTIL], created), ARGV[10], now)
if refusal then return refusal end

local lease = tonumber(ARGV[11])
local until_ms = rel_in(p[P_LEASE_UNTIL], created)
if lease then
  until_ms = now + lease
  p[P_LEASE_UNTIL] = until_ms - created
end
p[P_UPDATED] = now - created
if ARGV[12] == '1' then
  local fraction = tonumber(ARGV[13])
  if fraction then packed_put(p, P_FRACTION, fraction) end
  if ARGV[14] == '1' then packed_put(p, P_MESSAGE, ARGV[15]) end
  packed_put(p, P_PROGRESS_AT, now - created)
  if ARGV[16] == '1' then packed_put(p, P_CHECKPOINT, ARGV[17]) end
end
packed_save(key, p)
if lease then
  redis.call('ZADD', K.leased .. p[P_QUEUE], string.format('%d', until_ms), id)
end
return { 'ok', until_ms, p[P_CANCEL] == 1 and 1 or 0 }
