#!lua
-- append_audit: appends audit records to a namespace's audit log (issue 33).
--
-- KEYS[1] the audit log (stream)   <prefix>:{<ns>}:meta:audit
-- ARGV[1] max_len: the log's bound (XADD MAXLEN ~: Redis trims whole nodes, so the
--         log holds about this many entries, never much more)
-- ARGV[2..] record{principal, method, target, outcome, via}: groups of 5, one per
--           audited call, in the order the calls were answered
-- Returns the number of records appended.
--
-- Each record is one XADD with an id Redis makes from its own clock (invariant 7:
-- the record's time is its id's milliseconds, whichever replica wrote it). O(1)
-- amortised per record (trimming drops whole macro nodes); the service sends at most
-- 100 records per call. Not allow-oom: a full Redis refuses it before it writes,
-- and the service counts the loss (dueq_audit_dropped_total) without failing the
-- audited call.

local key, max_len = KEYS[1], ARGV[1]
local n = 0
for i = 2, #ARGV, 5 do
  redis.call('XADD', key, 'MAXLEN', '~', max_len, '*',
    'p', ARGV[i], 'm', ARGV[i + 1], 't', ARGV[i + 2], 'o', ARGV[i + 3], 'v', ARGV[i + 4])
  n = n + 1
end
return n
