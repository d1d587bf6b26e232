-- renew: extend a lease the caller still owns, never past its max hold.
--
-- KEYS[1]  lock key  lock:{R}
-- ARGV[1]  owner token
-- ARGV[2]  new lease length in ms, 1 .. MAX_LEASE_MS
--
-- Replies
--   {1, fence, ttl, now_ms}  renewed: the lease now ends ttl ms from now; ttl is ARGV[2], or
--                            less where the lock's end-by deadline comes first
--   {0, now_ms}              not owner: the lock is gone or another owner holds it
--   {2, fence}               max hold exceeded: nothing changed; the lease runs out on its own
--   error                    an argument out of range, or a lease hash whose fence or times
--                            are damaged (corrupt_key); nothing changed
--
-- Why it is safe: ownership is compared and the TTL set in one script. The fence is never
-- touched: ownership has not changed. Both limits come from Redis TIME, so a client with a
-- wrong or paused clock, or one asking for a long lease, cannot stretch its hold: no renewal is
-- granted at or after acquired + max_hold, and no TTL reaches past ends_by_ms = acquired +
-- max_hold + the lease granted at acquisition. (The TTL is not clamped to max_hold itself: the
-- lease would then always vanish at that moment and the holder could not tell "max hold
-- reached" from "lease lost".) now_ms is the server's TIME, for the keeper's clock watch: a
-- forward step of the server's clock (which expires leases early) shows in the first renewal
-- after it, without waiting for the keeper's once-a-second probe.

-- @include args
-- @include lease

local requested_ms = ms_value(2, 1, MAX_LEASE_MS)
local lease = redis.call('HMGET', KEYS[1], 'owner', 'fence', 'meta', 'renewals', 'acquired_ms', 'max_hold_until_ms',
    'ends_by_ms', 'lease_ms')
local now_ms = server_ms()
if lease[1] ~= ARGV[1] then
    return {0, now_ms}
end

-- Everything this renewal writes or replies is checked before it writes: a damaged hash fails
-- the script (corrupt_key) with the lease as it was.
local function damaged(what)
    error({err = 'ERR fencelock: lock ' .. KEYS[1] .. ' has no valid ' .. what .. ': repair it by hand'})
end
local fence = lease[2]
if not (string.find(fence or '', '^[1-9]%d*$') and #fence <= 16) then damaged('fence') end
local acquired, first_lease, max_hold = lease_meta(lease[3])
local max_hold_until, ends_by
if acquired then
    max_hold_until = acquired + max_hold
    ends_by = max_hold_until + first_lease
else
    -- An earlier version's hash; the oldest have no ends_by_ms: then the bound comes from the
    -- lease they hold now.
    max_hold_until = whole_number(lease[6]) or damaged('meta nor max_hold_until_ms')
    ends_by = whole_number(lease[7]) or max_hold_until + (whole_number(lease[8]) or damaged('ends_by_ms nor lease_ms'))
end
if now_ms >= max_hold_until then
    return {2, fence}
end

local lease_ms = math.min(requested_ms, ends_by - now_ms)
if lease_ms < 1 then
    return {2, fence}  -- its end-by has passed (an earlier version's hash): nothing to extend
end
redis.call('PEXPIRE', KEYS[1], lease_ms)
redis.call('HSET', KEYS[1], 'renewed_ms', now_ms, 'lease_ms', lease_ms, 'renewals', (whole_number(lease[4]) or 0) + 1)
return {1, fence, lease_ms, now_ms}
