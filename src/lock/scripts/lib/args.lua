-- Shared: argument checks and the server clock. Every script checks all of its ARGV before it
-- writes anything, so a bad argument leaves Redis exactly as it was.
--
-- The bounds are fencelock::limits (include/fencelock/options.hpp); a unit test keeps the two
-- in step. They keep every deadline a script computes (now_ms + max hold + lease) an exact
-- integer that Lua prints without an exponent, so no field is ever written as '1e+17' and no
-- PEXPIRE can fail after the lease hash was written.
local MAX_LEASE_MS = 86400000
local MAX_HOLD_MS = 2592000000
local MAX_SLOT_MS = 7202000

-- ARGV[i] as a whole number of milliseconds in [lo, hi], or an error reply (nothing written).
local function ms_arg(i, lo, hi)
    local s = ARGV[i]
    local v = s and string.match(s, '^%d+$') and tonumber(s)
    if not v or v < lo or v > hi then
        error({err = 'ERR fencelock: argument ' .. i .. " ('" .. tostring(s) ..
            "') must be whole milliseconds in [" .. lo .. ', ' .. hi .. ']'})
    end
    return v
end

-- Redis TIME in ms: the only clock that decides lease validity.
local function server_ms()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), t
end

-- TIME's reply as microseconds, a decimal string. Built as a string: Lua would print the
-- number with 14 significant digits.
local function time_us(t)
    return t[1] .. string.format('%06d', tonumber(t[2]))
end

-- The fence counter, read and compared as a canonical decimal string (Lua numbers are doubles;
-- a counter set by hand past 2^53 must be refused exactly, not rounded). Read before any write,
-- so a corrupt or exhausted counter fails the script with nothing changed.
--
-- Fences stay below 2^53 so that JSON and every client language carry them exactly.
local FENCE_MAX = '9007199254740991'  -- 2^53 - 1

-- a < b for canonical decimal strings.
local function decimal_less(a, b)
    if #a ~= #b then return #a < #b end
    return a < b
end

-- The current counter ('0' when absent), or an error reply if it is not a canonical integer
-- below 2^53 - 1 (a wrong type fails GET itself, also before any write).
local function current_fence(key)
    local s = redis.call('GET', key) or '0'
    if not (s == '0' or string.match(s, '^[1-9]%d*$')) or #s > #FENCE_MAX then
        error({err = 'ERR fencelock: fence counter ' .. key .. ' is not an integer: repair it by hand'})
    end
    if not decimal_less(s, FENCE_MAX) then
        error({err = 'ERR fencelock: fence counter ' .. key .. ' is exhausted (2^53 - 1)'})
    end
    return s
end

-- s + 1 for a canonical decimal string s below FENCE_MAX, exactly.
local function plus_one(s)
    local i = #s
    while i > 0 and string.byte(s, i) == 57 do i = i - 1 end  -- 57 is '9'
    if i == 0 then return '1' .. string.rep('0', #s) end
    return string.sub(s, 1, i - 1) .. string.char(string.byte(s, i) + 1) .. string.rep('0', #s - i)
end

-- The next fence after counter s: max(s + 1, Redis TIME in microseconds), t being TIME's reply.
-- The clock term is what keeps fences increasing when the counter goes backwards: a failover
-- that lost the last INCRs, or a restart without persistence, leaves an older (or no) counter,
-- but the promoted server's clock is past every microsecond at which the old one issued a
-- fence, provided the servers' clocks agree to within the failover time (docs/DESIGN.md,
-- "Fences across failover"). The counter term keeps fences strictly increasing when two
-- acquisitions share a microsecond or the clock steps back.
local function next_fence(s, t)
    local now_us = time_us(t)
    local after = plus_one(s)
    if decimal_less(after, now_us) then after = now_us end
    if decimal_less(FENCE_MAX, after) then
        error({err = 'ERR fencelock: the server clock is past 2^53 us: fences cannot follow it'})
    end
    return after
end
