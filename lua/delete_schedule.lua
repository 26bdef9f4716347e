-- delete_schedule: remove a schedule, its due index entry and its listing entry.
--
-- KEYS[1] due index <prefix>:{<ns>}:due   KEYS[2] id listing <prefix>:{<ns>}:ids
-- KEYS[3] schedule hash <prefix>:{<ns>}:s:<id>
-- ARGV[1] id
-- Returns 1 if the schedule existed, else 0.
--
-- Invariant 1: the record and both derived entries go together; a claim that still
-- met a dangling id would remove it anyway.

local existed = redis.call('DEL', KEYS[3])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return existed
