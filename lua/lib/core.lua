-- core: helpers every script shares. src/store/script.rs prepends this file to every
-- script, so each helper is written once.
--
-- now_ms() -> Redis TIME in epoch ms: the one clock (invariant 7 in docs/DESIGN.md).
-- is_error(x) -> whether x is an error reply (redis.error_reply, or a record loader's
--   DUEQ_CORRUPT answer), to be returned as it is.
-- rel_out(ms, base) / rel_in(v, base): a time kept as milliseconds after `base` (a
--   record's creation), '' when unset, so a fresh record's times cost a byte each.
-- secs_out(ms) / secs_in(v): a duration kept as -seconds when it is whole seconds
--   (one to three bytes where milliseconds take three to five), else as ms.
-- int_text(v): a number as integer text ('%d'), anything else as it is.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function is_error(x)
  return type(x) == 'table' and x.err ~= nil
end

local function rel_in(v, base)
  if v == nil or v == '' then return '' end
  return base + v
end

local function rel_out(ms, base)
  if ms == nil or ms == '' then return '' end
  return ms - base
end

local function secs_in(v)
  if v < 0 then return -v * 1000 end
  return v
end

local function secs_out(ms)
  if ms > 0 and ms % 1000 == 0 then return -(ms / 1000) end
  return ms
end

local function int_text(v)
  if type(v) == 'number' then return string.format('%d', v) end
  return v
end

