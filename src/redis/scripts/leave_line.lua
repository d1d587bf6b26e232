-- leave_line: a waiter that stops waiting gives up its place (fair line or sleepers), so the
-- waiters behind it need not wait for the place to lapse.
--
-- KEYS[1]  waiters    waiters:{R}
-- KEYS[2]  deadlines  waiter-deadlines:{R}
-- KEYS[3]  lock key   lock:{R}
-- KEYS[4]  sleepers   sleepers:{R}
-- ARGV[1]  owner token
-- ARGV[2]  release channel  released:{R}
--
-- Replies
--   1  the place was given up
--   0  the owner had no place
--
-- If the lock is free, the next waiter is woken (named as release names it): the one leaving
-- may have been woken for it. Lapsed places are left for acquire and release to drop.

local removed = redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[4], ARGV[1])
if removed == 0 then
    return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
if redis.call('EXISTS', KEYS[3]) == 0 then
    local first = redis.call('ZRANGE', KEYS[1], 0, 0)
    if #first == 0 then first = redis.call('ZRANGE', KEYS[4], 0, 0) end
    redis.pcall('PUBLISH', ARGV[2], first[1] or '')  -- without channel permission: no wake-up
end
return 1
