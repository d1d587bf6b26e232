-- reclaim: takes over one entry that has been pending longer than the visibility timeout (its
-- worker crashed or stalled) and reports how often it was delivered.
-- KEYS[1] queue:{Q}:stream
-- ARGV[1] consumer   ARGV[2] min idle ms   ARGV[3] scan cursor (start with 0-0)
-- Returns {next_cursor} when nothing was claimed, else {next_cursor, entry id, delivery count,
-- {field, value, ...}}.
-- @include args
local consumer, cursor = name_arg(1), entry_id_arg(3)
count_arg(2, 0, MAX_COUNT)  -- passed on as written: Redis reads the digits
local r = redis.call('XAUTOCLAIM', KEYS[1], 'workers', consumer, ARGV[2], cursor, 'COUNT', 1)
local entries = r[2]
if #entries == 0 or not entries[1] then return {r[1]} end
local e = entries[1]
local p = redis.call('XPENDING', KEYS[1], 'workers', e[1], e[1], 1)
local count = 1
if #p > 0 then count = p[1][4] end
return {r[1], e[1], count, e[2]}
