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

-- The fence counter: read and advanced as a decimal string, so fences stay exact up to
-- 2^63 - 1 (Lua numbers are doubles: INCR's reply would lose precision past 2^53 and two
-- owners could be handed the same fence). Read before any write, so a corrupt or exhausted
-- counter fails the script with nothing changed.
local FENCE_MAX = '9223372036854775807'

-- The current counter ('0' when absent), or an error reply if it is not a canonical integer in
-- [0, 2^63 - 1) (a wrong type fails GET itself, also before any write).
local function current_fence(key)
    local s = redis.call('GET', key) or '0'
    if not (s == '0' or string.match(s, '^[1-9]%d*$')) or #s > #FENCE_MAX then
        error({err = 'ERR fencelock: fence counter ' .. key .. ' is not an integer: repair it by hand'})
    end
    if #s == #FENCE_MAX and s >= FENCE_MAX then
        error({err = 'ERR fencelock: fence counter ' .. key .. ' is exhausted (2^63 - 1)'})
    end
    return s
end

-- s + 1 for a canonical decimal string s below FENCE_MAX, exactly.
local function next_fence(s)
    local i = #s
    while i > 0 and string.byte(s, i) == 57 do i = i - 1 end  -- 57 is '9'
    if i == 0 then return '1' .. string.rep('0', #s) end
    return string.sub(s, 1, i - 1) .. string.char(string.byte(s, i) + 1) .. string.rep('0', #s - i)
end
