-- leave: removes a consumer from the group when it has no pending entries (a worker slot that
-- shut down cleanly), so restarts do not pile up consumer names. A consumer that still owns
-- entries is kept: deleting it would drop them from the pending list, and they would never be
-- redelivered.
-- KEYS[1] queue:{Q}:stream
-- ARGV[1] consumer
-- Returns 1 when removed, 0 when kept.
-- @include args
local consumer = name_arg(1)
local p = redis.call('XPENDING', KEYS[1], 'workers', '-', '+', 1, consumer)
if #p > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], 'workers', consumer)
return 1
