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
-- If the lock is free, the next waiter is woken, named by the same live-waiter rule as release
-- (lib/line.lua): the one leaving may have been woken for it, and naming a waiter whose place
-- has lapsed would wake nobody while the lock sits free.

-- @include args
-- @include line

check_line_keys(KEYS[1], KEYS[2], KEYS[4])
local removed = redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[4], ARGV[1])
if removed == 0 then
    return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
if redis.call('EXISTS', KEYS[3]) == 0 then
    local now_ms = server_ms()
    local next_owner = first_live(KEYS[1], KEYS[2], now_ms) or first_live(KEYS[4], KEYS[2], now_ms) or ''
    redis.pcall('SPUBLISH', ARGV[2], next_owner)  -- without channel permission: no wake-up
end
return 1
