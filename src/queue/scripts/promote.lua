-- promote: moves delayed jobs that are due to the stream, atomically (each job is in exactly one
-- of the two keys at any time), at most ARGV[1] of them. Workers call it between reads, so no
-- thread ever sleeps out a delay.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:delayed
-- ARGV[1] limit
-- Returns {moved, next_due_in_ms} (next_due_in_ms = -1 when nothing else is delayed).
-- @include args
-- @include time
local limit = count_arg(1, 0, MAX_COUNT)
local now = server_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
if #due > 0 and redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XGROUP', 'CREATE', KEYS[1], 'workers', '0', 'MKSTREAM')
end
for _, member in ipairs(due) do
  redis.call('XADD', KEYS[1], '*', unpack(cmsgpack.unpack(member)))
  redis.call('ZREM', KEYS[2], member)
end
local next_due = -1
local head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #head > 0 then
  next_due = math.max(0, tonumber(head[2]) - now)
end
return {#due, next_due}
