-- retry_dead: puts dead jobs back on the stream with their business attempts reset, removing
-- them from the dead-letter stream in the same script (never in both, never in neither).
-- KEYS[1] queue:{Q}:dead   KEYS[2] queue:{Q}:stream   KEYS[3] queue:{Q}:stats
-- ARGV[1] job id, or "" for every dead job   ARGV[2] at most this many
-- Returns the number of jobs put back.
-- @include args
local only, limit = text_arg(1), count_arg(2, 0, MAX_COUNT)
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('XGROUP', 'CREATE', KEYS[2], 'workers', '0', 'MKSTREAM')
end
local moved = 0
for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
  if moved >= limit then break end
  local f = entry[2]
  local job_id = nil
  local fields = {}
  for i = 1, #f, 2 do
    local name, value = f[i], f[i + 1]
    if name == 'id' then job_id = value end
    if name == 'ba' then value = '0' end
    if name ~= 'reason' and name ~= 'failed_ms' then
      fields[#fields + 1] = name
      fields[#fields + 1] = value
    end
  end
  if only == '' or only == job_id then
    redis.call('XADD', KEYS[2], '*', unpack(fields))
    redis.call('XDEL', KEYS[1], entry[1])
    moved = moved + 1
  end
end
if moved > 0 then redis.call('HINCRBY', KEYS[3], 'retried_dead', moved) end
return moved
