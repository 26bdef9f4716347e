-- record_write.lua: what one lease change of a job record costs inside Redis's Lua,
-- for the job layout as it is (lua/lib/job.lua layout 2: the whole record unpacked,
-- changed and packed again) and for a record split into a body and a lease part
-- (issue 35's proposal), run by tools/profile/record_write.sh. Each variant does a
-- claim's change (state, attempts, updated, worker, token, lease_until, version) N
-- times on its own key and returns nanoseconds per change, by Redis TIME.
--
-- ARGV[1] N   ARGV[2] variant:
--   whole       GET, unpack the items, change, pack, SET (today)
--   front       lease array in front: GET, unpack it, change, pack it, join to the
--               body's bytes, SET (the body not unpacked: ack, extend)
--   tail        lease array after the body: GET, unpack it at its offset, change,
--               pack it, SETRANGE at the offset (the body not unpacked)
--   tail_claim  the same, the body unpacked too (a claim re-validates the job's
--               queue, number, priority and flow keys against the index entry)
--   getset      GET and SET of the record, nothing else (the commands alone)
local n, variant = tonumber(ARGV[1]), ARGV[2]
local payload = string.rep('x', 100)
local created = 1765000000000
local whole = { 'default', 'email.send', payload, 0, 123456, 123456, 1, 0, 3, 0, -1, -300,
  0, -30, created, '', 0 }
local body = { 'default', 'email.send', payload, 0, 123456, 123456, '', '', 3, 0, -1, -300,
  0, -30, created, '', '' }
local lease = { 1, 0, 0, '', '', '', '', '' }
local body_raw = cmsgpack.pack(body)
local lease_raw = cmsgpack.pack(lease)
redis.call('SET', 'record_write:whole', cmsgpack.pack(whole))
redis.call('SET', 'record_write:front', lease_raw .. body_raw)
redis.call('SET', 'record_write:tail', body_raw .. lease_raw)
local token = 'c9b1f3a2d4e5f607.' -- a claim's token base
local worker = 'worker-7f3a'
local function claim(p, s, a, u, w, t, l, v, i)
  p[s], p[a], p[u], p[w], p[t], p[l] = 3, (tonumber(p[a]) or 0) + 1, i % 60000, worker,
    token .. string.format('%d', i), i % 60000 + 30000
  p[v] = (tonumber(p[v]) or 1) + 1
end
local t0 = redis.call('TIME')
for i = 1, n do
  if variant == 'whole' then
    local raw = redis.call('GET', 'record_write:whole')
    local p = { select(2, cmsgpack.unpack_limit(raw, 44, 3)) }
    claim(p, 7, 8, 17, 18, 19, 21, 26, i)
    for k = 18, 26 do if p[k] == nil then p[k] = '' end end
    redis.call('SET', 'record_write:whole', cmsgpack.pack(p))
  elseif variant == 'front' then
    local raw = redis.call('GET', 'record_write:front')
    local got = { cmsgpack.unpack_limit(raw, 1) }
    local l = got[2]
    claim(l, 1, 2, 3, 4, 5, 7, 8, i)
    redis.call('SET', 'record_write:front', cmsgpack.pack(l) .. string.sub(raw, got[1] + 1))
  elseif variant == 'tail' or variant == 'tail_claim' then
    local raw = redis.call('GET', 'record_write:tail')
    if variant == 'tail_claim' then
      local b = { select(2, cmsgpack.unpack_limit(raw, 17, 3)) }
      if b[1] ~= 'default' then return redis.error_reply('body') end
    end
    local got = { cmsgpack.unpack_limit(raw, 1, #body_raw) }
    local l = got[2]
    claim(l, 1, 2, 3, 4, 5, 7, 8, i)
    redis.call('SETRANGE', 'record_write:tail', #body_raw, cmsgpack.pack(l))
  elseif variant == 'getset' then
    local raw = redis.call('GET', 'record_write:whole')
    redis.call('SET', 'record_write:whole', raw)
  else
    return redis.error_reply('unknown variant ' .. tostring(variant))
  end
end
local t1 = redis.call('TIME')
local us = (tonumber(t1[1]) - tonumber(t0[1])) * 1000000 + tonumber(t1[2]) - tonumber(t0[2])
-- Each variant must have made its n changes and kept the body: its record, read back
-- whole, holds version n + 1 and the payload (else its figure would time something else).
local function check(version, body_payload)
  if version ~= n + 1 or body_payload ~= payload then
    return redis.error_reply(variant .. ': the record read back is not the one changed')
  end
end
local wrong
if variant == 'whole' then
  local p = cmsgpack.unpack(redis.call('GET', 'record_write:whole'))
  wrong = check(p[26], p[3])
elseif variant == 'front' then
  local raw = redis.call('GET', 'record_write:front')
  local l, b = cmsgpack.unpack(raw)
  wrong = check(l[8], b[3])
elseif variant == 'tail' or variant == 'tail_claim' then
  local b, l = cmsgpack.unpack(redis.call('GET', 'record_write:tail'))
  wrong = check(l[8], b[3])
end
redis.call('DEL', 'record_write:whole', 'record_write:front', 'record_write:tail')
if wrong then return wrong end
return math.floor(us * 1000 / n)
