-- release: compare-and-delete, then tell waiters.
--
-- KEYS[1]  lock key   lock:{R}
-- KEYS[2]  waiters    waiters:{R}           the fair line (zset owner -> arrival)
-- KEYS[3]  deadlines  waiter-deadlines:{R}  owner -> ms when its place lapses
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
-- The message names the first live fair waiter, the only one acquire will grant the lock to,
-- so only that waiter wakes, in whichever process it is; with no fair waiter it is empty and
-- each subscribed client wakes its first waiter. Messages only wake: a waiter still takes the
-- lock through acquire, so a lost or spurious message can delay it, never let two hold it.

if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
    return 0
end
redis.call('DEL', KEYS[1])
local next_owner = ''
local first = redis.call('ZRANGE', KEYS[2], 0, 0)
if #first == 1 then
    local t = redis.call('TIME')
    local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    -- A lapsed head is left for acquire to drop; then anyone may be next.
    if tonumber(redis.call('HGET', KEYS[3], first[1]) or '0') > now_ms then next_owner = first[1] end
end
-- pcall: an ACL user without channel permission (Redis 7's default) must still release.
redis.pcall('PUBLISH', ARGV[2], next_owner)
return 1
