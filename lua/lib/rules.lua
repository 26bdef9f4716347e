-- rules: schedule rules that Rust implements too. They live here once, and a library
-- test (src/store/pins.rs) runs them through a real Redis against the Rust
-- functions over thousands of generated inputs, failing on any difference.
--
-- every_advance(due, every, now, end_ms) -> next slot after now (nil past end_ms or
--   past MAX_TIME),
--   slots missed in (due, min(now, end_ms)] capped at MAX_SKIP. Rust:
--   timing::Timing::advance for an `every` timing (slots are due + k * every, since
--   `due` is itself a slot).
-- MAX_SKIP: timing::MAX_SKIP_COUNT. MAX_TIME: timing::MAX_TIME_MS, 9999-12-31T23:59:59.999Z,
--   the last time a protobuf Timestamp can carry: a schedule whose next run would be
--   later is over.
-- occurrence_id(namespace, schedule id, due ms, rev[, kind]) -> the UUIDv5 of
--   domain::occurrence_id (lowercase, hyphenated), so the occurrence record a leased
--   claim writes and the id handed to the worker agree. kind 'trigger' (a
--   TriggerSchedule occurrence) appends '|trigger' to the name, so a trigger never
--   shares an id with a slot of the timing; other kinds (a backfilled slot) have the
--   slot's own id.

local MAX_SKIP = 100000
local MAX_TIME = 253402300799999

local function every_advance(due, every, now, end_ms)
  local hi = now
  if end_ms ~= '' and end_ms < hi then hi = end_ms end
  local skipped = 0
  if hi > due then skipped = math.floor((hi - due) / every) end
  local next_ms = due + (math.floor((now - due) / every) + 1) * every
  if end_ms ~= '' and next_ms > end_ms then next_ms = nil end
  if next_ms and next_ms > MAX_TIME then next_ms = nil end
  return next_ms, math.min(skipped, MAX_SKIP)
end

-- Bytes of the fixed UUID namespace of occurrence ids (domain::OCCURRENCE_NAMESPACE,
-- 64 75 65 71 00 00 40 00 80 00 00 00 00 00 00 01), as a literal: every schedule
-- script runs this file, and a literal costs nothing per call.
local OCC_NS = '\100\117\101\113\0\0\64\0\128\0\0\0\0\0\0\1'

local function occurrence_id(namespace, schedule_id, due_ms, rev, kind)
  local name = string.format('%d:%s|%d:%s|%d|%d', #namespace, namespace, #schedule_id,
    schedule_id, due_ms, rev)
  if kind == 'trigger' then name = name .. '|trigger' end
  local h = redis.sha1hex(OCC_NS .. name)
  local variant = string.format('%x', tonumber(string.sub(h, 17, 17), 16) % 4 + 8)
  return string.sub(h, 1, 8) .. '-' .. string.sub(h, 9, 12) .. '-5' .. string.sub(h, 14, 16)
    .. '-' .. variant .. string.sub(h, 18, 20) .. '-' .. string.sub(h, 21, 32)
end

