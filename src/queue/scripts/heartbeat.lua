-- heartbeat: resets the idle time of entries still being worked on, so XAUTOCLAIM does not hand
-- them to another worker. An entry is claimed again only if it is still pending for the same
-- consumer (XCLAIM alone would steal it back from a worker that reclaimed it meanwhile).
-- KEYS[1] queue:{Q}:stream
-- ARGV: consumer, entry id, consumer, entry id, ...
-- Returns the entry ids that are no longer pending for their consumer.
-- @include args
if #ARGV % 2 ~= 0 then
  error({err = 'ERR fencelock: arguments must be consumer/entry id pairs (got ' .. #ARGV .. ' values)'})
end
for i = 1, #ARGV, 2 do name_arg(i); entry_id_arg(i + 1) end
local lost = {}
for i = 1, #ARGV, 2 do
  local p = redis.call('XPENDING', KEYS[1], 'workers', ARGV[i + 1], ARGV[i + 1], 1, ARGV[i])
  if #p == 0 then
    lost[#lost + 1] = ARGV[i + 1]
  else
    redis.call('XCLAIM', KEYS[1], 'workers', ARGV[i], 0, ARGV[i + 1], 'JUSTID')
  end
end
return lost
