-- dead: moves a pending stream entry to the dead-letter stream with the reason, atomically.
-- Only the owning consumer may do it.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:dead   KEYS[3] queue:{Q}:stats
-- ARGV[1] consumer   ARGV[2] entry id   ARGV[3] reason   ARGV[4..] the job's field/value pairs
-- (none for an entry that came without fields: it is dead-lettered as it came)
-- Returns the dead-letter entry id, or 0 when the entry is not pending for this consumer.
-- @include args
-- @include time
local consumer, entry_id, reason = name_arg(1), entry_id_arg(2), text_arg(3)
local fields = field_pairs(4, 0, {'reason', reason, 'failed_ms', ''})
local p = redis.call('XPENDING', KEYS[1], 'workers', entry_id, entry_id, 1, consumer)
if #p == 0 then return 0 end
fields[4] = tostring(server_ms())
local id = redis.call('XADD', KEYS[2], '*', unpack(fields))
redis.call('XACK', KEYS[1], 'workers', entry_id)
redis.call('XDEL', KEYS[1], entry_id)
redis.call('HINCRBY', KEYS[3], 'dead', 1)
return id
