-- inspect: read a lock and its counter in one consistent snapshot. Writes nothing.
--
-- KEYS[1]  lock key   lock:{R}
-- KEYS[2]  fence key  fence:{R}
--
-- Reply: {last_fence, now_ms, pttl, field1, value1, field2, value2, ...}
--   last_fence  the counter ('0' when no fence was ever issued), as a string
--   now_ms      Redis TIME in ms, to turn stored timestamps into ages
--   pttl        PTTL of the lock (-2 when not held)
--   fields      HGETALL of the lease hash (empty when not held)

-- @include args

local last_fence = redis.call('GET', KEYS[2]) or '0'
local now_ms = server_ms()
local reply = {last_fence, now_ms, redis.call('PTTL', KEYS[1])}
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields do
    reply[#reply + 1] = fields[i]
end
return reply
