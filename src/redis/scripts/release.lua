-- release: compare-and-delete, then wake the next waiter.
--
-- KEYS[1]  lock key   lock:{R}
-- KEYS[2]  waiters    waiters:{R}           the fair line (zset owner -> arrival)
-- KEYS[3]  deadlines  waiter-deadlines:{R}  owner -> ms when its place lapses
-- KEYS[4]  sleepers   sleepers:{R}          other waiters, in arrival order
-- ARGV[1]  owner token
-- ARGV[2]  release channel  released:{R}
--
-- Replies
--   1  released
--   0  not owner: the lease expired or another owner holds the lock; nothing deleted
--
-- Why it is safe: a plain DEL (or GET then DEL) could delete the lock of the owner who took
-- over after our lease expired. Comparing and deleting in one script cannot.
-- The fence counter is never deleted: the next owner must get a larger fence.
--
-- The message names the waiter to wake: the first live fair waiter (the only one acquire will
-- grant to), else the longest-waiting sleeper. Only that waiter wakes, in whichever process it
-- is, so waiters in many processes do not all try at once. With nobody named the message is
-- empty and each subscribed client wakes its first waiter. Messages only wake: a waiter still
-- takes the lock through acquire, so a lost or spurious one can delay it, never let two hold it.

if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
    return 0
end
redis.call('DEL', KEYS[1])

-- The first place of a line that has not lapsed; lapsed places before it are dropped.
local now_ms
local function first_live(line)
    while true do
        local first = redis.call('ZRANGE', line, 0, 0)
        if #first == 0 then return nil end
        if not now_ms then
            local t = redis.call('TIME')
            now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        end
        if tonumber(redis.call('HGET', KEYS[3], first[1]) or '0') > now_ms then return first[1] end
        redis.call('ZREM', line, first[1])
        redis.call('HDEL', KEYS[3], first[1])
    end
end

local next_owner = ''
if redis.call('EXISTS', KEYS[2], KEYS[4]) > 0 then
    next_owner = first_live(KEYS[2]) or first_live(KEYS[4]) or ''
end
-- pcall: an ACL user without channel permission (Redis 7's default) must still release.
redis.pcall('PUBLISH', ARGV[2], next_owner)
return 1
