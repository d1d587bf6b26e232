-- Shared: writing a lease. acquire's grant and a release's direct handoff (lib/handoff.lua) write
-- the same hash, so inspect and list show the same metadata whoever granted it.
--
-- The hash and its TTL are written together from checked numbers, so no lock is ever left
-- without a TTL. `waiting` '1' means a waiter may sleep on this lease's release message, so
-- release must send it; only '0' lets release skip the line lookups and the message.
-- `ttl_ms` is the lease itself for acquire, and may be shorter for a direct grant. `handed`:
-- a release or leave_line granted it (lib/handoff.lua), marked `handed 1`.
local function write_lease(lock, owner, fence, now_ms, lease_ms, max_hold_ms, host, pid, label, waiting, ttl_ms,
                           handed)
    redis.call('HSET', lock,
        'owner', owner,
        'fence', fence,
        'acquired_ms', now_ms,
        'renewed_ms', now_ms,
        'renewals', 0,
        'lease_ms', lease_ms,
        'max_hold_until_ms', now_ms + max_hold_ms,
        'ends_by_ms', now_ms + max_hold_ms + lease_ms,
        'host', host,
        'pid', pid,
        'label', label,
        'waiting', waiting)
    if handed then redis.call('HSET', lock, 'handed', '1') end
    redis.call('PEXPIRE', lock, ttl_ms)
end
