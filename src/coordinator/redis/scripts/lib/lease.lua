-- Shared: the lease hash. acquire's grant and a release's direct handoff (lib/handoff.lua) write
-- it with write_lease, so inspect and list show the same metadata whoever granted it.
--
-- Four fields, because writing the lease is an acquisition's largest cost in Redis (a hash of
-- twelve fields cost four times one of four: docs/DESIGN.md, "Lean scripts"):
--   owner    the owner token                       release, renew, acquire compare it
--   fence    the fence issued with the lease       refused attempts and renewals reply it
--   waiting  '1': a waiter may sleep on this lease's release message, so release must send it;
--            only '0' lets release skip the line lookups and the message
--   meta     '<acquired_ms> <lease_ms> <max_hold_ms> <holder>', holder being the client's
--            '<pid> <host> <label>' (the label may hold spaces: it comes last)
-- plus `handed 1` on a lease a release or leave_line granted directly, and, from its first
-- renewal on, renew's `renewed_ms`, `renewals` and `lease_ms` (the TTL it granted). Readers
-- derive the rest: max hold until = acquired + max_hold, and no renewal reaches past
-- ends by = acquired + max_hold + the lease in meta. Hashes written by earlier versions have no
-- meta but `acquired_ms`, `max_hold_until_ms`, `ends_by_ms`, `lease_ms`, `host`, `pid` and
-- `label`; renew, force_release and inspect read both (lease_meta here, inspect_call.cpp).
-- The field names clients of earlier versions read to lock (owner, fence, waiting, handed) are
-- unchanged, so they keep working against leases this version writes.
--
-- The hash and its TTL are written together from checked numbers, so no lock is ever left
-- without a TTL. `ttl_ms` is the lease itself for acquire, and may be shorter for a direct grant.
-- lease_ms and max_hold_ms may be checked ARGV text (ms_arg), written without a conversion.
local function write_lease(lock, owner, fence, now_ms, lease_ms, max_hold_ms, holder, waiting, ttl_ms, handed)
    local meta = now_ms .. ' ' .. lease_ms .. ' ' .. max_hold_ms .. ' ' .. holder
    if handed then
        redis.call('HSET', lock, 'owner', owner, 'fence', fence, 'waiting', waiting, 'meta', meta, 'handed', '1')
    else
        redis.call('HSET', lock, 'owner', owner, 'fence', fence, 'waiting', waiting, 'meta', meta)
    end
    redis.call('PEXPIRE', lock, ttl_ms)
end

-- A lease's `meta` numbers: when it was acquired (ms, Redis TIME), the lease it was granted
-- with and its max hold (ms); nothing for an earlier version's hash (no meta).
local function lease_meta(meta)
    if not meta then return nil end
    local at, first_lease, max_hold = string.match(meta, '^(%d+) (%d+) (%d+)')
    return tonumber(at), tonumber(first_lease), tonumber(max_hold)
end
