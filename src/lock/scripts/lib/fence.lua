-- Shared: issuing fences (acquire, and a release's direct grant in lib/handoff.lua). Needs lib/args.
--
-- Fences are canonical decimal texts below 2^53 (FENCE_MAX), so that JSON and every client
-- language carry them exactly. They are compared and issued as text: Lua numbers are doubles,
-- and the common case (the clock term wins) then needs no conversion at all.
local FENCE_MAX = '9007199254740991'  -- 2^53 - 1

-- The counter's text ('0' when absent), or an error reply if it is not a canonical integer below
-- 2^53 - 1 (a wrong type fails GET itself). Read before any write, so a corrupt or exhausted
-- counter fails the script with nothing changed.
local function current_fence(key)
    local s = redis.call('GET', key) or '0'
    if not (s == '0' or string.find(s, '^[1-9]%d*$')) then
        error({err = 'ERR fencelock: fence counter ' .. key .. ' is not an integer: repair it by hand'})
    end
    if not decimal_less(s, FENCE_MAX) then
        error({err = 'ERR fencelock: fence counter ' .. key .. ' is exhausted (2^53 - 1)'})
    end
    return s
end

-- The next fence after counter text s: max(s + 1, Redis TIME in microseconds), now_us being
-- server_time_text's first text. The clock term is what keeps fences increasing when the counter
-- goes backwards: a failover that lost the last writes, or a restart without persistence, leaves
-- an older (or no) counter, but the promoted server's clock is past every microsecond at which
-- the old one issued a fence, provided the servers' clocks agree to within the failover time
-- (docs/DESIGN.md, "Fences across failover"). The counter term keeps fences strictly increasing
-- when two acquisitions share a microsecond or the clock steps back.
local function next_fence(s, now_us)
    if decimal_less(s, now_us) then  -- then s + 1 <= now_us
        if decimal_less(FENCE_MAX, now_us) then
            error({err = 'ERR fencelock: the server clock is past 2^53 us: fences cannot follow it'})
        end
        return now_us
    end
    return string.format('%d', s + 1)  -- s < 2^53 - 1, so exact as a double
end
