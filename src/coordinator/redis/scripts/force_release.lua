-- force_release: an operator deletes a stuck lock, leaving an audit entry. Atomic: the checks,
-- the delete and the audit entry happen together or not at all.
--
-- KEYS[1]  lock key     lock:{R}
-- KEYS[2]  audit stream audit:{R}  (one per resource: it shares the lock's hash tag, so on Redis
--          Cluster it lives in the lock's slot and this script can write both)
-- ARGV[1]  resource name (for the audit entry)
-- ARGV[2]  reason (non-empty, checked by the client)
-- ARGV[3]  operator (user@host of whoever ran the command)
-- ARGV[4]  expected owner token, or '' for any owner
-- ARGV[5]  '1' to delete even a lease renewed within its last lease period
-- ARGV[6]  release channel  released:{R} (waiters are woken as on a normal release)
--
-- Replies
--   {1, owner, fence, since_renew_ms, audit_id}  released and audited (fence: decimal string)
--   {0}                                          not held: nothing to do, nothing audited
--   {2, owner}                                   the holder is not the expected owner
--   {3, owner, fence, since_renew_ms, lease_ms, renewed}
--                                                refused: renewed (or, renewed = 0, acquired)
--                                                within the last lease period, so its holder is
--                                                probably alive
--
-- Why: deleting a lock by hand is the last resort. The activity check stops an operator from
-- pulling a live holder's lease (its writes would then be rejected as stale only if a new owner
-- writes first); the audit entry records who did it and why. The fence counter is untouched,
-- so the next owner's fence is still larger than the forced-out holder's.

-- @include args
-- @include lease

-- Arguments the audit entry and the wake-up need, checked before anything is written.
if ARGV[5] ~= '0' and ARGV[5] ~= '1' then
    error({err = "ERR fencelock: argument 5 ('" .. tostring(ARGV[5]) .. "') must be '0' or '1'"})
end
text_arg(6)
for i = 1, 3 do text_arg(i) end
if type(ARGV[4]) ~= 'string' then error({err = 'ERR fencelock: argument 4 is missing'}) end

local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
    return {0}
end
if ARGV[4] ~= '' and owner ~= ARGV[4] then
    return {2, owner}
end
-- A lease not renewed yet has no renewed_ms nor lease_ms of renew's (lib/lease.lua): its
-- acquisition and its first lease count.
local fields = redis.call('HMGET', KEYS[1], 'fence', 'renewed_ms', 'lease_ms', 'meta', 'acquired_ms')
local now_ms = server_ms()
-- A damaged record must not stop the operator's last resort: a fence that is not one is
-- reported (and audited) as '0', and a record that cannot say when it was renewed counts as
-- renewed just now for what is left of its TTL (its holder can rely on it no longer; its
-- renewals fail on the damage anyway), so only --even-if-active deletes it before then.
local fence = fields[1]
if not (fence and string.find(fence, '^[1-9]%d*$') and #fence <= 16) then fence = '0' end
-- Whole, finite numbers only: 'nan' or '-inf' would make any holder look idle.
local acquired, first_lease = lease_meta(fields[4])
local lease_ms = whole_number(fields[3]) or first_lease
local last = whole_number(fields[2]) or acquired or whole_number(fields[5])
local since_renew
if last and lease_ms then
    since_renew = now_ms - last
else
    since_renew, lease_ms = 0, math.max(redis.call('PTTL', KEYS[1]), 0)
end
if ARGV[5] ~= '1' and since_renew < lease_ms then
    return {3, owner, fence, since_renew, lease_ms, fields[2] and 1 or 0}
end
-- The audit entry first: XADD is the one write here that can fail (an audit key of the wrong
-- type, a stream whose IDs are used up), and then nothing was deleted. DEL of the lock hash
-- cannot fail, and the wake-up is a pcall.
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', 10000, '*',
    'resource', ARGV[1], 'owner', owner, 'fence', fence, 'reason', ARGV[2],
    'operator', ARGV[3], 'time_ms', now_ms, 'since_renew_ms', since_renew,
    'forced_active', ARGV[5])
redis.call('DEL', KEYS[1])
redis.pcall('SPUBLISH', ARGV[6], '')  -- without channel permission: no wake-up
return {1, owner, fence, since_renew, id}
