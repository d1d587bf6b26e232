-- release: compare-and-delete, then serve the next waiter if one may wait: grant it the lease
-- (direct handoff) or wake it.
--
-- KEYS[1]  lock key   lock:{R}
-- KEYS[2]  waiters    waiters:{R}           the fair line (zset owner -> arrival)
-- KEYS[3]  deadlines  waiter-deadlines:{R}  owner -> ms when its place lapses
-- KEYS[4]  sleepers   sleepers:{R}          other waiters, in arrival order
-- KEYS[5]  fence key  fence:{R}             read and advanced only for a direct grant
-- KEYS[6]  handoff    handoff:{R}           waiters' direct-grant arguments
-- ARGV[1]  owner token
-- ARGV[2]  release channel  released:{R}
-- ARGV[3]  the releasing client's id (optional): a waiter of that same client is granted the
--          lock (its lease, bounded by its place), and told by this reply instead of a message
--          (lib/handoff.lua)
-- ARGV[4]  (optional, with ARGV[3]) the releasing client's next waiter for R (its successor),
--          which that client vouches waits now: it is granted the lock if no live place comes
--          first, and the whole lease (not bounded by its place) if its own place is the first
-- ARGV[5]  its lease ms, 1 .. MAX_LEASE_MS   ARGV[6] its max hold ms, lease .. MAX_HOLD_MS
-- ARGV[7]  its holder text ('<pid> <host> <label>', lib/lease.lua)
--
-- Replies
--   1                         released
--   {1, owner, fence, ttl}    released, and the lease granted to `owner`, a waiter of the
--                             releasing client (ARGV[3], or its successor ARGV[4]): fence
--                             issued, TTL in ms. No message announces it: the releasing client
--                             hands it to its waiter (one that is giving up gives it back by
--                             leave_line)
--   0                         not owner: another owner holds the lock; nothing deleted
--  -1                         not held: nobody holds the lock (the lease expired or was
--                             released); nothing deleted
--
-- Why it is safe: a plain DEL (or GET then DEL) could delete the lock of the owner who took
-- over after our lease expired. Comparing and deleting in one script cannot.
-- The fence counter is never deleted: the next owner must get a larger fence.
--
-- The message names the waiter to wake: the first live fair waiter (the only one acquire will
-- grant to), else the longest-waiting sleeper. Only that waiter wakes, in whichever process it
-- is, so waiters in many processes do not all try at once. With nobody named the message is
-- empty and each subscribed client wakes its first waiter. A named waiter that stored grant
-- arguments is granted the lease here and the message says so (lib/handoff.lua); any other
-- message only wakes: that waiter still takes the lock through acquire, so a lost or spurious
-- one can delay it, never let two hold it.

-- The lean path comes before the shared code, whose functions would cost a closure each per run.
local lease = redis.call('HMGET', KEYS[1], 'owner', 'waiting')
if lease[1] ~= ARGV[1] then
    -- Told apart for whoever reads the answer: a lease that ran out with nobody after it, and
    -- another owner's lock. A damaged hash without an owner counts as held.
    if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
    return 0
end
-- Nobody waited on this lease (see acquire.lua): no line to look at, no message to send. A lease
-- written by an older acquire has no `waiting` field and takes the full path.
if lease[2] == '0' and not ARGV[4] then
    redis.call('DEL', KEYS[1])
    return 1
end

-- @include args
-- @include fence
-- @include line
-- @include lease
-- @include handoff

-- The channel and the successor's arguments are checked before the first write, like every
-- argument: without a channel no waiter would be granted or woken.
text_arg(2)
local successor
if ARGV[4] then
    local lease_ms = ms_arg(5, 1, MAX_LEASE_MS)
    ms_arg(6, lease_ms, MAX_HOLD_MS)
    if not ARGV[3] or not ARGV[7] then error({err = 'ERR fencelock: a successor needs arguments 3 and 7'}) end
    successor = {owner = ARGV[4], lease = ARGV[5], max_hold = ARGV[6], holder = ARGV[7]}
end
local k = {lock = KEYS[1], fence = KEYS[5], waiters = KEYS[2], deadlines = KEYS[3], sleepers = KEYS[4],
           handoff = KEYS[6]}
local granted
if lease[2] == '0' then
    -- Nobody in Redis's line, nobody to tell: the successor takes the lock at once. Its lease
    -- is marked '0' too; a waiter that comes later marks it with its refused attempt.
    redis.call('DEL', KEYS[1])
    local now_us, now_ms = server_time_text()
    granted = grant_successor(k, successor, now_us, now_ms, '0')
else
    local has_waiters = redis.call('EXISTS', KEYS[2], KEYS[4]) > 0
    if has_waiters then check_line_keys(KEYS[2], KEYS[3], KEYS[4], KEYS[6]) end
    redis.call('DEL', KEYS[1])
    if has_waiters then
        granted = hand_on(k, ARGV[2], ARGV[3], successor)
    else
        -- pcall: an ACL user without channel permission (Redis 7's default) must still release.
        redis.pcall('SPUBLISH', ARGV[2], '')
        if successor then
            local now_us, now_ms = server_time_text()
            granted = grant_successor(k, successor, now_us, now_ms, '1')
        end
    end
end
if granted then return {1, granted[1], granted[2], granted[3]} end
return 1
