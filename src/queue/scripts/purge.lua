-- purge: deletes up to ARGV[3] jobs of one state (ready, delayed or dead; never running ones,
-- whose handlers are at work), or only the job with id ARGV[4], and forgets their idempotency
-- keys, so the same key can be enqueued again. The caller repeats until nothing is left.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:delayed   KEYS[3] queue:{Q}:dead
-- KEYS[4] queue:{Q}:keys     KEYS[5] queue:{Q}:stats
-- ARGV[1] state   ARGV[2] cursor: "" or the next_cursor of the previous call (ready: the last
-- entry scanned, which skips the running entries seen)   ARGV[3] at most this many jobs
-- ARGV[4] job id, or "" for any   ARGV[5] counter to add the count to ("purged", "discarded")
-- Returns {deleted, next_cursor}; next_cursor is "" when the state has nothing more to scan.
-- @include args
local state, cursor = state_cursor_args({'ready', 'delayed', 'dead'}, '^%d+$', 'a count of members to skip')
local limit, only, counter = count_arg(3, 1, MAX_COUNT), text_arg(4), name_arg(5)
local deleted = 0
local next_cursor = ''
-- A key maps to the job that took it; a later job with the same key was a duplicate and
-- never replaced the mapping, so only a mapping to this very job is removed.
local function forget(fields)
  local id, key
  for i = 1, #fields, 2 do
    if fields[i] == 'id' then id = fields[i + 1] end
    if fields[i] == 'key' then key = fields[i + 1] end
  end
  if only ~= '' and id ~= only then return false end
  if key and id and redis.call('HGET', KEYS[4], key) == id then redis.call('HDEL', KEYS[4], key) end
  return true
end
if state == 'ready' or state == 'dead' then
  local key = KEYS[1]
  if state == 'dead' then key = KEYS[3] end
  local start = '-'
  if cursor ~= '' then start = '(' .. cursor end
  local entries = redis.call('XRANGE', key, start, '+', 'COUNT', limit)
  for _, e in ipairs(entries) do
    local running = state == 'ready' and #redis.call('XPENDING', key, 'workers', e[1], e[1], 1) > 0
    if not running and forget(e[2]) then
      redis.call('XDEL', key, e[1])
      deleted = deleted + 1
    end
  end
  if #entries == limit then next_cursor = entries[#entries][1] end
else  -- delayed
  local skip = 0
  if cursor ~= '' then skip = tonumber(cursor) end
  local members = redis.call('ZRANGE', KEYS[2], skip, skip + limit - 1)
  for _, m in ipairs(members) do
    if forget(cmsgpack.unpack(m)) then
      redis.call('ZREM', KEYS[2], m)
      deleted = deleted + 1
    else
      skip = skip + 1
    end
  end
  if #members == limit then next_cursor = tostring(skip) end
end
if deleted > 0 then redis.call('HINCRBY', KEYS[5], counter, deleted) end
return {deleted, next_cursor}
