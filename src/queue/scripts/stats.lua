-- stats: one consistent snapshot of a queue's sizes and counters.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:delayed   KEYS[3] queue:{Q}:dead   KEYS[4] queue:{Q}:stats
-- Returns {stream length, pending (in flight), delayed, dead, {counter, value, ...}}.
local len = redis.call('XLEN', KEYS[1])
local pending = 0
if len > 0 then
  local s = redis.pcall('XPENDING', KEYS[1], 'workers')
  if type(s) == 'table' and not s.err then pending = s[1] end
end
return {len, pending, redis.call('ZCARD', KEYS[2]), redis.call('XLEN', KEYS[3]),
        redis.call('HGETALL', KEYS[4])}
