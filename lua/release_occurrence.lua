#!lua flags=allow-oom
-- release_occurrence: give back a leased schedule occurrence whose claim
-- `--redis-wait-replicas` could not confirm (issue 29 item 11), without spending its
-- attempt: the next leased ClaimDueSchedule re-hands it at the same attempt.
--
-- KEYS[1] occurrence leases (zset occurrence id -> lease deadline ms)  <prefix>:{<ns>}:oleases
-- ARGV[1] occurrence_prefix: occurrence record prefix <prefix>:{<ns>}:o:
-- ARGV[2] occurrence_id: occurrence id   ARGV[3] token: the claim's lease token
-- Returns { released (1: given back; 0: the token no longer holds the lease, nothing
--   changed) }
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 4 (a lease is the only authority): only an occurrence still leased under the
--   given token is released. Its lease ends now (deadline = now, token cleared, so
--   the claim's token can no longer ack it) and its attempt is taken back (- 1), so
--   claim_due.lua's re-hand of an expired lease (attempt + 1) hands it out at the
--   attempt the unconfirmed claim used, and never finishes it for max_attempts on
--   account of that claim. The schedule itself stays advanced: the occurrence, not
--   the slot, is what is given back, and it stays the schedule's outstanding one.
-- * 1: the lease index is re-scored in the same script as the record. O(log N).

local now = now_ms()
local id, token = ARGV[2], ARGV[3]
local key = ARGV[1] .. id
local h = redis.call('HMGET', key, 'state', 'token', 'attempt')
if h[1] ~= 'leased' or h[2] ~= token then return { 0 } end
local attempt = math.max((tonumber(h[3]) or 1) - 1, 0)
redis.call('HSET', key, 'token', '', 'lease_until', now, 'attempt', attempt)
redis.call('ZADD', KEYS[1], now, id)
return { 1 }
