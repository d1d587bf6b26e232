-- leave_line: a fair waiter that stops waiting gives up its place, so the waiters behind it
-- need not wait for the place to lapse.
--
-- KEYS[1]  waiters    waiters:{R}
-- KEYS[2]  deadlines  waiter-deadlines:{R}
-- ARGV[1]  owner token
-- ARGV[2]  release channel  released:{R}
--
-- Replies
--   1  the place was given up (the next waiter is woken)
--   0  the owner had no place

if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
    return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.pcall('PUBLISH', ARGV[2], '')  -- without channel permission: no wake-up
return 1
