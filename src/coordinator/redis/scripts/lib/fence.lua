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
    if s == FENCE_MAX then
        error({err = 'ERR fencelock: fence counter ' .. key .. ' is exhausted (2^53 - 1)'})
    end
    if not decimal_less(s, FENCE_MAX) then  -- above any fence fencelock issues: damage
        error({err = 'ERR fencelock: fence counter ' .. key .. ' is not an integer below 2^53: repair it by hand'})
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

-- How far the counter may run ahead of this server's clock from bursts alone: it passes TIME
-- only when fences are issued faster than one per microsecond, which Redis cannot sustain for
-- a second. A larger lead means the clock is behind the history the counter holds: stepped
-- back, or a promoted replica or restarted server whose clock lags the old master's, so fences
-- issued here may be below ones a lost write had issued (docs/DESIGN.md, "Clock skew").
local CLOCK_LEAD_MAX_US = 1000000

-- For a fence next_fence issued from counter text s at now_us: the counter's lead over the
-- clock in us when it is past a burst's (a number), else nil. Only when the counter term won.
local function clock_lead(s, fence, now_us)
    if fence == now_us then return nil end  -- the clock term: the common case, no conversion
    local lead = (s + 0) - (now_us + 0)  -- both below 2^53: exact
    if lead > CLOCK_LEAD_MAX_US then return lead end
    return nil
end
