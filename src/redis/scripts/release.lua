-- release: compare-and-delete, then tell waiters.
--
-- KEYS[1]  lock key  lock:{R}
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
-- The message only wakes waiters early; they still take the lock through acquire, so a lost
-- or spurious message can delay a waiter but never let two hold the lock.

if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
    redis.call('DEL', KEYS[1])
    -- pcall: an ACL user without channel permission (Redis 7's default) must still release.
    redis.pcall('PUBLISH', ARGV[2], '')
    return 1
end
return 0
