-- Shared: puts a job on the stream now, or into the delayed set until Redis TIME + delay_ms
-- (packed with cmsgpack: promote.lua moves it to the stream when it is due). Needs lib/time.lua
-- included before it (an included piece cannot include another).
local function place_job(stream, delayed, fields, delay_ms)
  if delay_ms > 0 then
    redis.call('ZADD', delayed, server_ms() + delay_ms, cmsgpack.pack(fields))
  else
    redis.call('XADD', stream, '*', unpack(fields))
  end
end
