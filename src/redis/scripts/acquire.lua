-- acquire: take the lease on a free lock and issue a new fencing token, atomically.
--
-- KEYS[1]  lock key    lock:{R}   hash holding the current lease
-- KEYS[2]  fence key   fence:{R}  integer counter; never expires, never deleted
-- ARGV[1]  owner token (fresh per acquisition)
-- ARGV[2]  lease length in ms (> 0, validated by the client)
-- ARGV[3]  max hold in ms (>= lease): renewals are refused after acquisition + max hold
-- ARGV[4]  holder host   ARGV[5] holder pid   ARGV[6] holder label (may be empty)
--
-- Replies
--   {1, fence, pttl, 0}  acquired: a new fence was issued
--   {1, fence, pttl, 1}  already held by this same owner token (a retry after a lost
--                        reply): the existing fence, nothing changed
--   {0, pttl}            contended: held by another owner for pttl more ms
--   error                WRONGTYPE or a non-integer counter; nothing was written
--
-- Why it is safe: the check and both writes run as one script, so no client can interleave.
-- INCR runs before any write to the lock, so a failing INCR leaves no lease without a fence.
-- TIME is the server's clock, the only clock that decides lease validity.

local holder = redis.call('HGET', KEYS[1], 'owner')
if holder then
    local pttl = redis.call('PTTL', KEYS[1])
    if holder == ARGV[1] then
        return {1, tonumber(redis.call('HGET', KEYS[1], 'fence')), pttl, 1}
    end
    return {0, pttl}
end

local fence = redis.call('INCR', KEYS[2])
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_ms = tonumber(ARGV[2])

redis.call('HSET', KEYS[1],
    'owner', ARGV[1],
    'fence', fence,
    'acquired_ms', now_ms,
    'renewed_ms', now_ms,
    'renewals', 0,
    'lease_ms', lease_ms,
    'max_hold_until_ms', now_ms + tonumber(ARGV[3]),
    'host', ARGV[4],
    'pid', ARGV[5],
    'label', ARGV[6])
redis.call('PEXPIRE', KEYS[1], lease_ms)
return {1, fence, lease_ms, 0}
