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

-- ARGV[i] as a whole number of milliseconds in [lo, hi] (lo >= 1) written in canonical digits,
-- so a script may store the text as it came; or an error reply (nothing written).
local function ms_arg(i, lo, hi)
    local s = ARGV[i]
    local v = s and string.find(s, '^[1-9]%d*$') and s + 0  -- digits only: `+ 0` cannot fail
    if not v or v < lo or v > hi then
        error({err = 'ERR fencelock: argument ' .. i .. " ('" .. tostring(s) ..
            "') must be whole milliseconds in [" .. lo .. ', ' .. hi .. ']'})
    end
    return v
end

-- The same check for a number that is used but never stored: any notation Lua reads as a
-- whole number will do, and it costs less than the pattern.
local function ms_value(i, lo, hi)
    local v = tonumber(ARGV[i])
    if not v or v % 1 ~= 0 or v < lo or v > hi then
        error({err = 'ERR fencelock: argument ' .. i .. " ('" .. tostring(ARGV[i]) ..
            "') must be whole milliseconds in [" .. lo .. ', ' .. hi .. ']'})
    end
    return v
end

-- ARGV[i] must be given and non-empty (a channel, a token): an error reply otherwise.
local function text_arg(i)
    if type(ARGV[i]) ~= 'string' or ARGV[i] == '' then
        error({err = 'ERR fencelock: argument ' .. i .. ' must be a non-empty text'})
    end
    return ARGV[i]
end

-- A stored number read back: a whole, finite number in [0, 2^53), or nil ('nan', '-inf', a
-- fraction and damage all are nil, so a caller cannot compare or write them back unnoticed).
local function whole_number(text)
    local v = tonumber(text)
    if v and v % 1 == 0 and v >= 0 and v < 2 ^ 53 then return v end
    return nil
end

-- Redis TIME in ms: the only clock that decides lease validity.
local function server_ms()
    local t = redis.call('TIME')
    return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- a < b for canonical decimal texts.
local function decimal_less(a, b)
    if #a ~= #b then return #a < #b end
    return a < b
end

-- Redis TIME as decimal texts: microseconds (fences, a line's arrival order) and milliseconds,
-- made from TIME's own digits. Numbers would need a conversion each way, and Lua prints a
-- number of 16 digits with 14 (1.7961894564248e+15).
local function server_time_text()
    local t = redis.call('TIME')
    local us = string.rep('0', 6 - #t[2]) .. t[2]  -- TIME's microseconds carry no leading zeros
    return t[1] .. us, t[1] .. string.sub(us, 1, 3)
end
