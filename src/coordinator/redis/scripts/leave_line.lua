-- leave_line: a waiter that stops waiting gives up its place (fair line or sleepers), so the
-- waiters behind it need not wait for the place to lapse, and gives back a lease a release
-- granted it directly meanwhile (lib/handoff.lua, marked `handed 1`), which it will not use.
-- A lease its own acquire granted is kept: a caller holding the owner token may retry for it.
--
-- KEYS[1]  waiters    waiters:{R}
-- KEYS[2]  deadlines  waiter-deadlines:{R}
-- KEYS[3]  lock key   lock:{R}
-- KEYS[4]  sleepers   sleepers:{R}
-- KEYS[5]  fence key  fence:{R}     for a direct grant to the next waiter
-- KEYS[6]  handoff    handoff:{R}   waiters' direct-grant arguments
-- ARGV[1]  owner token
-- ARGV[2]  release channel  released:{R}
--
-- Replies
--   1  the place was given up
--   2  the owner held a lease handed to it (a direct grant it had not taken up): deleted
--   0  the owner had no place and held nothing
--
-- If the lock is free (or was the leaver's), the next waiter is served as release serves it
-- (lib/handoff.lua), named by the same live-waiter rule: the one leaving may have been woken
-- for it, and naming a waiter whose place has lapsed would wake nobody while the lock sits free.

-- @include args
-- @include fence
-- @include line
-- @include lease
-- @include handoff

-- Arguments, and reads that can fail (WRONGTYPE), come before the first write.
text_arg(1)
text_arg(2)
check_line_keys(KEYS[1], KEYS[2], KEYS[4], KEYS[6])
local lease = redis.call('HMGET', KEYS[3], 'owner', 'handed')
local holds = lease[1] == ARGV[1] and lease[2] == '1'
local removed = redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[4], ARGV[1])
if removed == 0 and not holds then
    return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1])
if holds then redis.call('DEL', KEYS[3]) end
if holds or redis.call('EXISTS', KEYS[3]) == 0 then
    hand_on({lock = KEYS[3], fence = KEYS[5], waiters = KEYS[1], deadlines = KEYS[2], sleepers = KEYS[4],
             handoff = KEYS[6]}, ARGV[2])
end
return holds and 2 or 1
