-- acquire: take the lease on a free lock and issue a new fencing token, atomically.
--
-- KEYS[1]  lock key     lock:{R}              hash holding the current lease
-- KEYS[2]  fence key    fence:{R}             integer counter; never expires, never deleted
-- KEYS[3]  waiters      waiters:{R}           fair-mode line: zset owner -> arrival (us)
-- KEYS[4]  deadlines    waiter-deadlines:{R}  hash owner -> ms when the waiter's place lapses
-- KEYS[5]  sleepers     sleepers:{R}          other waiters: zset owner -> arrival (us); they
--                                             block nobody, releases wake them in turn
-- ARGV[1]  owner token (fresh per acquisition)
-- ARGV[2]  lease length in ms, 1 .. MAX_LEASE_MS
-- ARGV[3]  max hold in ms, lease .. MAX_HOLD_MS: renewals are refused from acquisition +
--          max hold on, and no renewal extends the lock past acquisition + max hold + lease
-- ARGV[4]  holder host   ARGV[5] holder pid   ARGV[6] holder label (may be empty)
-- ARGV[7]  when not granted: '1' take (or keep) a place in the fair line, '2' among the
--          sleepers, '0' neither (a single attempt)
-- ARGV[8]  ms a place in the line lasts unless the waiter tries again, 1 .. MAX_SLOT_MS
--
-- Replies
--   {1, fence, pttl, 0}  acquired: a new fence was issued (fences are decimal strings)
--   {1, fence, pttl, 1}  already held by this same owner token (a retry after a lost
--                        reply): the existing fence, nothing changed
--   {0, ms}              not granted: held by another owner for ms more
--   {0, ms, 1}           not granted: free, but an earlier fair waiter's turn, whose place
--                        lapses in ms
--   error                an argument out of range, WRONGTYPE, or a corrupt or exhausted
--                        counter; nothing was written
--
-- Why it is safe: the check and the writes run as one script, so no client can interleave.
-- Every argument and the counter are checked before the first write, so a failing acquire
-- changes nothing (not even the line), and no lease exists without a fence. The lease hash
-- and its TTL are written together from checked numbers: no lock is ever left without a TTL.
-- TIME is the server's clock, the only clock that decides lease validity.
--
-- The line: every acquisition, fair or not, yields to a live fair waiter ahead of it, so a
-- fair waiter cannot be overtaken. A waiter that stops trying (crash, gave up without leaving)
-- loses its place when its deadline passes, so a dead waiter blocks the lock no longer than
-- ARGV[8]. Both line keys expire with the last place, so they never outlive their waiters.

-- @include args
-- @include line

local lease_ms = ms_arg(2, 1, MAX_LEASE_MS)
local max_hold_ms = ms_arg(3, lease_ms, MAX_HOLD_MS)
local mode = ARGV[7]
if mode ~= '0' and mode ~= '1' and mode ~= '2' then
    error({err = "ERR fencelock: argument 7 must be '0', '1' or '2'"})
end
local slot_ms = ms_arg(8, 1, MAX_SLOT_MS)

local holder = redis.call('HGET', KEYS[1], 'owner')
if holder == ARGV[1] then
    return {1, redis.call('HGET', KEYS[1], 'fence'), redis.call('PTTL', KEYS[1]), 1}
end

local now_ms, t = server_ms()

local function wait_in_line()
    if mode == '0' then return end
    check_line_keys(KEYS[3], KEYS[4], KEYS[5])
    local line = mode == '1' and KEYS[3] or KEYS[5]
    local arrival_us = time_us(t)
    redis.call('ZADD', line, 'NX', arrival_us, ARGV[1])
    redis.call('HSET', KEYS[4], ARGV[1], now_ms + slot_ms)
    -- A key's TTL never ends before its longest-lived place.
    if redis.call('PTTL', line) < slot_ms then redis.call('PEXPIRE', line, slot_ms) end
    if redis.call('PTTL', KEYS[4]) < slot_ms then redis.call('PEXPIRE', KEYS[4], slot_ms) end
end

if holder then
    wait_in_line()
    return {0, redis.call('PTTL', KEYS[1])}
end
-- Computed before any write: a failing counter or clock changes nothing.
local fence = next_fence(current_fence(KEYS[2]), t)
check_line_keys(KEYS[3], KEYS[4], KEYS[5])
local head, head_deadline = first_live(KEYS[3], KEYS[4], now_ms)
if head and head ~= ARGV[1] then
    wait_in_line()
    return {0, head_deadline - now_ms, 1}
end

redis.call('SET', KEYS[2], fence)
if head then
    redis.call('ZREM', KEYS[3], head)
    redis.call('HDEL', KEYS[4], head)
elseif mode == '2' then
    redis.call('ZREM', KEYS[5], ARGV[1])
    redis.call('HDEL', KEYS[4], ARGV[1])
end

redis.call('HSET', KEYS[1],
    'owner', ARGV[1],
    'fence', fence,
    'acquired_ms', now_ms,
    'renewed_ms', now_ms,
    'renewals', 0,
    'lease_ms', lease_ms,
    'max_hold_until_ms', now_ms + max_hold_ms,
    'ends_by_ms', now_ms + max_hold_ms + lease_ms,
    'host', ARGV[4],
    'pid', ARGV[5],
    'label', ARGV[6])
redis.call('PEXPIRE', KEYS[1], lease_ms)
return {1, fence, lease_ms, 0}
