-- renew: extend a lease the caller still owns, never past its max hold.
--
-- KEYS[1]  lock key  lock:{R}
-- ARGV[1]  owner token
-- ARGV[2]  new lease length in ms (> 0)
--
-- Replies
--   {1, fence, pttl}  renewed: the lease now ends pttl (= ARGV[2]) ms from now
--   {0}               not owner: the lock is gone or another owner holds it
--   {2, fence}        max hold exceeded: nothing changed; the lease runs out on its own
--
-- Why it is safe: ownership is compared and the TTL set in one script. The fence is never
-- touched: ownership has not changed. The max-hold deadline is checked against Redis TIME,
-- so a client with a wrong or paused clock cannot stretch its hold: no renewal is granted at
-- or after acquired + max_hold, so no lease outlives acquired + max_hold + one lease length.
-- (The TTL is deliberately not clamped to the deadline: the lease would then always vanish at
-- the deadline and the holder could not tell "max hold reached" from "lease lost".)

local owner = redis.call('HGET', KEYS[1], 'owner')
if owner ~= ARGV[1] then
    return {0}
end

local fence = tonumber(redis.call('HGET', KEYS[1], 'fence'))
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now_ms >= tonumber(redis.call('HGET', KEYS[1], 'max_hold_until_ms')) then
    return {2, fence}
end

local lease_ms = tonumber(ARGV[2])
redis.call('PEXPIRE', KEYS[1], lease_ms)
redis.call('HSET', KEYS[1], 'renewed_ms', now_ms, 'lease_ms', lease_ms)
redis.call('HINCRBY', KEYS[1], 'renewals', 1)
return {1, fence, lease_ms}
