-- enqueue: adds a job unless a job with the same idempotency key was enqueued before.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:delayed   KEYS[3] queue:{Q}:keys   KEYS[4] queue:{Q}:stats
-- ARGV[1] job id   ARGV[2] idempotency key   ARGV[3] delay in ms (0: ready now)
-- ARGV[4..] the job's field/value pairs, as the stream entry will carry them
-- Returns {1, id} when added; {0, first_id} when the key is known (only the duplicate counter changes).
-- The due time of a delayed job comes from Redis TIME, so no client clock is trusted.
-- @include args
-- @include time
-- @include place
local id, key = name_arg(1), name_arg(2)
local delay = count_arg(3, 0, MAX_DELAY_MS)
local fields = field_pairs(4, 1)
local first = redis.call('HGET', KEYS[3], key)
if first then
  redis.call('HINCRBY', KEYS[4], 'duplicate_enqueues', 1)
  return {0, first}
end
redis.call('HSET', KEYS[3], key, id)
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XGROUP', 'CREATE', KEYS[1], 'workers', '0', 'MKSTREAM')
end
place_job(KEYS[1], KEYS[2], fields, delay)
redis.call('HINCRBY', KEYS[4], 'enqueued', 1)
return {1, id}
