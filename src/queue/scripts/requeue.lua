-- requeue: replaces a pending stream entry by a delayed copy of the job with updated counters,
-- atomically: the job is never lost (the copy exists before the entry goes) and never doubled
-- (the entry goes in the same script). Only the owning consumer may do it.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:delayed   KEYS[3] queue:{Q}:stats
-- ARGV[1] consumer   ARGV[2] entry id   ARGV[3] delay in ms   ARGV[4] counter to increment
-- ARGV[5..] the job's field/value pairs (updated counters)
-- Returns 1 when requeued, 0 when the entry is not pending for this consumer (nothing changed).
local p = redis.call('XPENDING', KEYS[1], 'workers', ARGV[2], ARGV[2], 1, ARGV[1])
if #p == 0 then return 0 end
local fields = {}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
local delay = tonumber(ARGV[3])
if delay > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[2], now + delay, cmsgpack.pack(fields))
else
  redis.call('XADD', KEYS[1], '*', unpack(fields))
end
redis.call('XACK', KEYS[1], 'workers', ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('HINCRBY', KEYS[3], ARGV[4], 1)
return 1
