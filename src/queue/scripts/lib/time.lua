-- Shared: the server clock. Due times and failure times come from Redis TIME, so no client
-- clock is trusted and every worker agrees on when a job is due.

-- Redis TIME in whole milliseconds.
local function server_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
