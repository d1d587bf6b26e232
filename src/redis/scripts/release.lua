-- release: compare-and-delete.
--
-- KEYS[1]  lock key  lock:{R}
-- ARGV[1]  owner token
--
-- Replies
--   1  released
--   0  not owner: the lease expired or another owner holds the lock; nothing deleted
--
-- Why it is safe: a plain DEL (or GET then DEL) could delete the lock of the owner who took
-- over after our lease expired. Comparing and deleting in one script cannot.
-- The fence counter is never deleted: the next owner must get a larger fence.

if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
