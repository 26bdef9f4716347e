#!lua flags=allow-oom
-- ack_occurrence: confirm a leased schedule occurrence was handled.
--
-- KEYS[1] occurrence leases (zset occurrence id -> lease deadline ms)  <prefix>:{<ns>}:oleases
-- KEYS[2] namespace meta <prefix>:{<ns>}:meta   KEYS[3] due index <prefix>:{<ns>}:due
-- ARGV[1] occurrence_prefix: occurrence record prefix <prefix>:{<ns>}:o:
-- ARGV[2] occurrence_id: occurrence id   ARGV[3] token: lease token
-- ARGV[4] acked_ttl_ms: how long an acked record is kept (ms), so a repeated ack is
--   told "acked"
-- ARGV[5] schedule_prefix: schedule record prefix <prefix>:{<ns>}:s:
-- ARGV[6] runs_prefix: recent runs prefix <prefix>:{<ns>}:rr: (its entry becomes "acked")
-- Returns { "ok", released (1 when a buffered slot of the schedule became due, 0) }
--   | { "missing" } | { "stale", state } | { "expired" }
--
-- Invariant 4 (docs/DESIGN.md: a lease is the only authority): only the current token of an unexpired
-- lease may ack; a stale or expired one changes nothing (the occurrence is, or will
-- be, re-handed to the next leased ClaimDueSchedule). The record leaves the lease
-- index in the same script that marks it acked. Invariant 1: when the schedule tracks
-- this occurrence as outstanding (OVERLAP_POLICY_SKIP, BUFFER_ONE), it stops tracking
-- it here, and a buffered slot enters the due index in the same script
-- (lib/schedule.lua sched_release). O(log N).

local now = now_ms()
local id, token = ARGV[2], ARGV[3]
local key = ARGV[1] .. id
local h = redis.call('HMGET', key, 'state', 'token', 'lease_until', 's.id')
if not h[1] then return { 'missing' } end
if h[1] ~= 'leased' or h[2] ~= token then return { 'stale', h[1] } end
if (tonumber(h[3]) or 0) <= now then return { 'expired' } end
redis.call('ZREM', KEYS[1], id)
redis.call('HSET', key, 'state', 'acked', 'lease_until', '', 'acked_ms', now)
redis.call('PEXPIRE', key, ARGV[4])
runs_update(ARGV[6] .. (h[4] or ''), id, 'acked')
local released = 0
if sched_release(KEYS[2], KEYS[3], ARGV[5], h[4], id) then released = 1 end
return { 'ok', released }
