-- complete: acknowledges and deletes a stream entry whose effect committed (or was found
-- committed: a duplicate), and counts it, atomically. Only the consumer that owns the pending
-- entry may do it: an entry reclaimed by another worker meanwhile is left alone.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:stats
-- ARGV[1] consumer   ARGV[2] entry id   ARGV[3] counter to increment ("completed", "duplicates")
-- Returns 1 when acknowledged, 0 when the entry is not pending for this consumer (nothing changed).
-- @include args
local consumer, entry_id, counter = name_arg(1), entry_id_arg(2), name_arg(3)
local p = redis.call('XPENDING', KEYS[1], 'workers', entry_id, entry_id, 1, consumer)
if #p == 0 then return 0 end
redis.call('XACK', KEYS[1], 'workers', entry_id)
redis.call('XDEL', KEYS[1], entry_id)
redis.call('HINCRBY', KEYS[2], counter, 1)
return 1
