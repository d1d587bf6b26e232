-- dead: moves a pending stream entry to the dead-letter stream with the reason, atomically.
-- Only the owning consumer may do it.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:dead   KEYS[3] queue:{Q}:stats
-- ARGV[1] consumer   ARGV[2] entry id   ARGV[3] reason   ARGV[4..] the job's field/value pairs
-- Returns the dead-letter entry id, or 0 when the entry is not pending for this consumer.
local p = redis.call('XPENDING', KEYS[1], 'workers', ARGV[2], ARGV[2], 1, ARGV[1])
if #p == 0 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fields = {'reason', ARGV[3], 'failed_ms', tostring(now)}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[2], '*', unpack(fields))
redis.call('XACK', KEYS[1], 'workers', ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('HINCRBY', KEYS[3], 'dead', 1)
return id
