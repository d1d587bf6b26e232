-- acquire: take the lease on a free lock and issue a new fencing token, atomically.
--
-- KEYS[1]  lock key     lock:{R}              hash holding the current lease (lib/lease.lua)
-- KEYS[2]  fence key    fence:{R}             integer counter; never expires, never deleted
-- KEYS[3]  waiters      waiters:{R}           fair-mode line: zset owner -> arrival (us)
-- KEYS[4]  deadlines    waiter-deadlines:{R}  hash owner -> ms when the waiter's place lapses
-- KEYS[5]  sleepers     sleepers:{R}          other waiters: zset owner -> arrival (us); they
--                                             block nobody, releases wake them in turn
-- KEYS[6]  handoff      handoff:{R}           hash owner -> grant arguments (cmsgpack), with the
--                                             place; expires with the last place
-- ARGV[1]  owner token (fresh per acquisition)
-- ARGV[2]  lease length in ms, 1 .. MAX_LEASE_MS
-- ARGV[3]  max hold in ms, lease .. MAX_HOLD_MS: renewals are refused from acquisition +
--          max hold on, and no renewal extends the lock past acquisition + max hold + lease
-- ARGV[4]  holder: '<pid> <host> <label>' (host without spaces; the label may be empty), shown
--          by inspect and list
-- ARGV[5]  when not granted: '1' take (or keep) a place in the fair line, '2' among the
--          sleepers, '0' neither (a single attempt)
-- ARGV[6]  ms a place in the line lasts unless the waiter tries again, 1 .. MAX_SLOT_MS
-- ARGV[7]  '1' when threads of the caller's client (the caller included) wait for this lock in
--          its local line (some may sleep on the next release message without a place in
--          Redis's line), else '0'; absent counts as '0'
-- ARGV[8]  direct grants: a refused attempt that takes a place also leaves its grant arguments
--          in KEYS[6], so that a release can grant it the lease (lib/handoff.lua). '1': from any
--          release (the caller hears this lock's release messages); '2': only from a release by
--          its own client (ARGV[9]), which tells it by its reply; '0' or absent: never, and
--          arguments an earlier attempt of this owner left are removed
-- ARGV[9]  the caller's client id: required with '2'; with '1' it lets a release by that same
--          client grant the lock
-- Every argument is an EVAL argument Redis copies into Lua on each call (about 1,100
-- instructions each): the holder is one argument, and the client leaves out trailing '0's.
--
-- Replies
--   {1, fence, pttl, 0}  acquired: a new fence was issued (fences are decimal strings)
--   {1, fence, pttl, 0, lead}  the same, and the counter ran `lead` us ahead of this server's
--                        clock (lib/fence.lua, clock_lead): the clock is behind the history
--   {1, fence, pttl, 1}  already held by this same owner token (a retry after a lost
--                        reply): the existing fence, nothing changed
--   {1, fence, pttl, 2}  the same, for a lease a release or leave_line handed to this owner
--                        (`handed 1`, lib/handoff.lua): a new grant for the caller
--   {0, ms, 0, fence}    not granted: held by another owner for ms more; fence: the holder's
--                        ({0, ms, 0} when the holder's hash has no fence)
--   {0, ms, 1, fence}    not granted: free, but an earlier fair waiter's turn, whose place
--                        lapses in ms; fence: the counter
--                        (the fence is the newest one issued when the script ran: a direct
--                        grant with a larger fence was issued after this attempt)
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
-- ARGV[6]. Both line keys expire with the last place, so they never outlive their waiters.
--
-- Lean when nobody waits: one EXISTS over the lock and the four line keys tells a free lock
-- with no line at all, and then the grant costs TIME, GET and SET of the counter, HSET and
-- PEXPIRE, with as little Lua as possible between them (fences and times as texts made from
-- TIME's digits, ARGV text written as is, and the line's functions defined only past the lean
-- path: every `local function` costs a closure per run; docs/DESIGN.md, "Lean scripts"). The
-- lease's `waiting` field tells release whether to look for a waiter and publish: '1' when a
-- line existed at the grant or the client said local waiters wait (ARGV[7]), and set to '1' by
-- every refused attempt that will wait. A waiter therefore never sleeps on a message a release
-- skips: it either made a refused attempt on this lease, or had a place when it was granted, or
-- waits in the grantee's own client, which said so (docs/DESIGN.md, "Lean scripts").

-- @include args
-- @include fence
-- @include lease

local lease_ms = ms_arg(2, 1, MAX_LEASE_MS)
local max_hold_ms = ms_arg(3, lease_ms, MAX_HOLD_MS)
local mode = ARGV[5]
if mode ~= '0' and mode ~= '1' and mode ~= '2' then
    error({err = "ERR fencelock: argument 5 must be '0', '1' or '2'"})
end
local slot_ms = ms_value(6, 1, MAX_SLOT_MS)
local local_waiters = ARGV[7] or '0'
if local_waiters ~= '0' and local_waiters ~= '1' then
    error({err = "ERR fencelock: argument 7 must be '0' or '1'"})
end
local direct = ARGV[8] or '0'
if direct ~= '0' and direct ~= '1' and direct ~= '2' then
    error({err = "ERR fencelock: argument 8 must be '0', '1' or '2'"})
end
local client_id = ARGV[9] or ''
if direct == '2' and client_id == '' then
    error({err = 'ERR fencelock: argument 9 (the client id) is needed with argument 8 = 2'})
end
if not ARGV[4] then error({err = 'ERR fencelock: argument 4 (the holder) is missing'}) end
-- The owner goes into grant messages ('grant <owner> <fence> <ttl>'): printable, no spaces, as
-- OwnerToken::make requires.
if not string.find(ARGV[1] or '', '^[!-~]+$') then
    error({err = 'ERR fencelock: argument 1 (the owner token) must be printable ASCII without spaces'})
end

-- Writes the lease (lib/lease.lua) with the holder metadata inspect and list show. The lease
-- and max hold go in as their checked ARGV text: no number conversion. `lead`: clock_lead's.
local function grant(fence, now_ms, waiting, lead)
    write_lease(KEYS[1], ARGV[1], fence, now_ms, ARGV[2], ARGV[3], ARGV[4], waiting, ARGV[2])
    if lead then return {1, fence, lease_ms, 0, lead} end
    return {1, fence, lease_ms, 0}
end

-- The lean path: no lock and no line at all (one call for the five keys), so nobody waits and
-- nothing can have the wrong type: check the counter, grant, done. Times stay texts until a
-- number is needed.
local taken = redis.call('EXISTS', KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6]) > 0
local now_us, now_ms_text = server_time_text()
if not taken then
    local counter = current_fence(KEYS[2])
    local fence = next_fence(counter, now_us)
    redis.call('SET', KEYS[2], fence)
    return grant(fence, now_ms_text, local_waiters, clock_lead(counter, fence, now_us))
end
local now_ms = now_ms_text + 0

-- @include line

local lease = redis.call('HMGET', KEYS[1], 'owner', 'waiting', 'fence', 'handed')
local holder = lease[1]
if holder == ARGV[1] then
    return {1, lease[3], redis.call('PTTL', KEYS[1]), lease[4] == '1' and 2 or 1}
end

-- A key's TTL never ends before its longest-lived place.
local function outlive_place(key)
    if redis.call('PTTL', key) < slot_ms then redis.call('PEXPIRE', key, slot_ms) end
end

local function wait_in_line()
    if mode == '0' then return end
    check_line_keys(KEYS[3], KEYS[4], KEYS[5], KEYS[6])
    local line = mode == '1' and KEYS[3] or KEYS[5]
    redis.call('ZADD', line, 'NX', now_us, ARGV[1])
    redis.call('HSET', KEYS[4], ARGV[1], now_ms + slot_ms)
    outlive_place(line)
    outlive_place(KEYS[4])
    if direct ~= '0' then
        local args = {lease_ms, max_hold_ms, ARGV[4], slot_ms, client_id, direct == '1'}
        redis.call('HSET', KEYS[6], ARGV[1], cmsgpack.pack(args))
        outlive_place(KEYS[6])
    else
        redis.call('HDEL', KEYS[6], ARGV[1])  -- it no longer hears grants: never grant to it
    end
end

if holder then
    wait_in_line()
    -- A waiter sleeps on the release message from now on: make sure the release sends it.
    if mode ~= '0' and lease[2] ~= '1' then redis.call('HSET', KEYS[1], 'waiting', '1') end
    -- HMGET gives false for a missing fence, which would become a nil element: leave it out.
    if not lease[3] then return {0, redis.call('PTTL', KEYS[1]), 0} end
    return {0, redis.call('PTTL', KEYS[1]), 0, lease[3]}
end
-- Computed before any write: a failing counter or clock changes nothing.
local counter = current_fence(KEYS[2])
local fence = next_fence(counter, now_us)
check_line_keys(KEYS[3], KEYS[4], KEYS[5], KEYS[6])
local head, head_deadline = first_live(KEYS[3], KEYS[4], now_ms, KEYS[6])
if head and head ~= ARGV[1] then
    wait_in_line()
    return {0, head_deadline - now_ms, 1, counter}
end

redis.call('SET', KEYS[2], fence)
if head then
    redis.call('ZREM', KEYS[3], head)
    redis.call('HDEL', KEYS[4], head)
    redis.call('HDEL', KEYS[6], head)
elseif mode == '2' then
    redis.call('ZREM', KEYS[5], ARGV[1])
    redis.call('HDEL', KEYS[4], ARGV[1])
    redis.call('HDEL', KEYS[6], ARGV[1])
end

-- The line existed when this lease was granted: its release wakes the next waiter.
return grant(fence, now_ms, '1', clock_lead(counter, fence, now_us))
