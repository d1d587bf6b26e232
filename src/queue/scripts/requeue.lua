-- requeue: replaces a pending stream entry by a delayed copy of the job with updated counters,
-- atomically: the job is never lost (the copy exists before the entry goes) and never doubled
-- (the entry goes in the same script). Only the owning consumer may do it.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:delayed   KEYS[3] queue:{Q}:stats
-- ARGV[1] consumer   ARGV[2] entry id   ARGV[3] delay in ms   ARGV[4] counter to increment
-- ARGV[5..] the job's field/value pairs (updated counters)
-- Returns 1 when requeued, 0 when the entry is not pending for this consumer (nothing changed).
-- @include args
-- @include time
-- @include place
local consumer, entry_id = name_arg(1), entry_id_arg(2)
local delay = count_arg(3, 0, MAX_DELAY_MS)
local counter = name_arg(4)
local fields = field_pairs(5, 1)
local p = redis.call('XPENDING', KEYS[1], 'workers', entry_id, entry_id, 1, consumer)
if #p == 0 then return 0 end
place_job(KEYS[1], KEYS[2], fields, delay)
redis.call('XACK', KEYS[1], 'workers', entry_id)
redis.call('XDEL', KEYS[1], entry_id)
redis.call('HINCRBY', KEYS[3], counter, 1)
return 1
