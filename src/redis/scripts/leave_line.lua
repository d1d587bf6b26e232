-- leave_line: a fair waiter that stops waiting gives up its place, so the waiters behind it
-- need not wait for the place to lapse.
--
-- KEYS[1]  waiters    waiters:{R}
-- KEYS[2]  deadlines  waiter-deadlines:{R}
-- KEYS[3]  lock key   lock:{R}
-- ARGV[1]  owner token
-- ARGV[2]  release channel  released:{R}
--
-- Replies
--   1  the place was given up
--   0  the owner had no place
--
-- Only the head leaving a free lock changes who may take it: only then is the new head woken
-- (named in the message, as release does).

local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
if not rank then
    return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if rank == 0 and redis.call('EXISTS', KEYS[3]) == 0 then
    local first = redis.call('ZRANGE', KEYS[1], 0, 0)
    redis.pcall('PUBLISH', ARGV[2], first[1] or '')  -- without channel permission: no wake-up
end
return 1
