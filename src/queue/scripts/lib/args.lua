-- Shared: argument checks. Every script checks all of its ARGV at the top, before it reads or
-- writes anything, so a bad argument is an error reply naming it and leaves Redis as it was
-- (as the lock's scripts do, src/coordinator/redis/scripts/lib/args.lua). The client never sends such
-- arguments; the checks stop a buggy or hand-made EVAL from failing halfway through a script.

-- ARGV[i] as a whole number in [lo, hi] written in plain digits; an error reply otherwise.
local function count_arg(i, lo, hi)
  local s = ARGV[i]
  local v = s and string.find(s, '^%d+$') and tonumber(s)
  if not v or v < lo or v > hi then
    error({err = 'ERR fencelock: argument ' .. i .. " ('" .. tostring(s) ..
      "') must be a whole number in [" .. string.format('%d', lo) .. ', ' .. string.format('%d', hi) .. ']'})
  end
  return v
end

-- ARGV[i] must be given and non-empty (a consumer, a job id, a counter): an error reply otherwise.
local function name_arg(i)
  if type(ARGV[i]) ~= 'string' or ARGV[i] == '' then
    error({err = 'ERR fencelock: argument ' .. i .. ' must be a non-empty text'})
  end
  return ARGV[i]
end

-- ARGV[i] must be given; it may be empty (a reason, "any job", "from the start").
local function text_arg(i)
  if type(ARGV[i]) ~= 'string' then
    error({err = 'ERR fencelock: argument ' .. i .. ' is missing'})
  end
  return ARGV[i]
end

local ENTRY_ID = '^%d+%-%d+$'

-- ARGV[i] must be a stream entry id ('<ms>-<seq>').
local function entry_id_arg(i)
  local s = ARGV[i]
  if not (s and string.find(s, ENTRY_ID)) then
    error({err = 'ERR fencelock: argument ' .. i .. " ('" .. tostring(s) .. "') must be a stream entry id"})
  end
  return s
end

-- ARGV[i] must be a page cursor: '' (from the start) or text matching `pattern`, the form `what`
-- describes.
local function cursor_arg(i, pattern, what)
  local s = ARGV[i]
  if not (s and (s == '' or string.find(s, pattern))) then
    error({err = 'ERR fencelock: argument ' .. i .. " ('" .. tostring(s) .. "') must be '' or " .. what})
  end
  return s
end

-- ARGV[i] must be one of the texts in `allowed`.
local function choice_arg(i, allowed)
  for _, a in ipairs(allowed) do
    if ARGV[i] == a then return a end
  end
  error({err = 'ERR fencelock: argument ' .. i .. " ('" .. tostring(ARGV[i]) ..
    "') must be one of " .. table.concat(allowed, ', ')})
end

-- ARGV[1] a job state out of `states` and ARGV[2] a page cursor in it: '', or a stream entry
-- id, or for 'delayed' a text matching `delayed_pattern` (the form `delayed_what` describes).
local function state_cursor_args(states, delayed_pattern, delayed_what)
  local state = choice_arg(1, states)
  if state == 'delayed' then return state, cursor_arg(2, delayed_pattern, delayed_what) end
  return state, cursor_arg(2, ENTRY_ID, 'a stream entry id')
end

-- ARGV[from..] as field/value pairs, at least `min_pairs` of them, appended to `into` (or a new
-- table); an error reply when there are fewer or their count is odd.
local function field_pairs(from, min_pairs, into)
  local n = #ARGV - from + 1
  if n < 2 * min_pairs or n % 2 ~= 0 then
    error({err = 'ERR fencelock: arguments ' .. from .. '.. must be field/value pairs (got ' ..
      math.max(n, 0) .. ' values)'})
  end
  local fields = into or {}
  for i = from, #ARGV do fields[#fields + 1] = ARGV[i] end
  return fields
end

-- The largest count or idle time a script takes: 2^53 - 1, the last integer a Lua number holds
-- exactly (a limit is passed on to Redis as the number Lua read).
local MAX_COUNT = 9007199254740991
-- The longest delay a script adds to Redis TIME in ms: 2^52 keeps the due time (about 1.8e12
-- today) an exact integer of a Lua number and of a sorted-set score.
local MAX_DELAY_MS = 4503599627370496
