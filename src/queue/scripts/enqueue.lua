-- enqueue: adds a job unless a job with the same idempotency key was enqueued before.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:delayed   KEYS[3] queue:{Q}:keys   KEYS[4] queue:{Q}:stats
-- ARGV[1] job id   ARGV[2] idempotency key   ARGV[3] delay in ms (0: ready now)
-- ARGV[4..] the job's field/value pairs, as the stream entry will carry them
-- Returns {1, id} when added; {0, first_id} when the key is known (only the duplicate counter changes).
-- The due time of a delayed job comes from Redis TIME, so no client clock is trusted.
local first = redis.call('HGET', KEYS[3], ARGV[2])
if first then
  redis.call('HINCRBY', KEYS[4], 'duplicate_enqueues', 1)
  return {0, first}
end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XGROUP', 'CREATE', KEYS[1], 'workers', '0', 'MKSTREAM')
end
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
local delay = tonumber(ARGV[3])
if delay > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[2], now + delay, cmsgpack.pack(fields))
else
  redis.call('XADD', KEYS[1], '*', unpack(fields))
end
redis.call('HINCRBY', KEYS[4], 'enqueued', 1)
return {1, ARGV[1]}
