-- list: one page of a queue's jobs in one state, oldest first, as one consistent snapshot.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:delayed   KEYS[3] queue:{Q}:dead
-- ARGV[1] state: ready, running, delayed or dead
-- ARGV[2] cursor: "" for the first page, else the next_cursor of the page before (ready,
--         running, dead: the last entry id listed; delayed: "due_ms:n", the last due time listed
--         and how many jobs with that due time were listed)
-- ARGV[3] page size (at least 1)
-- Returns {next_cursor ("" when nothing follows), job, job, ...}; each job is
-- {where, consumer, idle_ms, deliveries, {field, value, ...}}: `where` is the entry id (the due
-- time in ms for delayed jobs); consumer, idle_ms and deliveries are "" / 0 / 0 unless running.
-- Ready jobs are the stream's entries no consumer holds (not in the group's pending list).
-- @include args
local state, cursor = state_cursor_args({'ready', 'running', 'delayed', 'dead'}, '^%d+:%d+$', "'due_ms:n'")
local limit = count_arg(3, 1, MAX_COUNT)
local jobs = {}
local next_cursor = ''
local function stream_page(key, keep)
  local start = '-'
  if cursor ~= '' then start = '(' .. cursor end
  local batch = limit + 1
  while true do
    local entries = redis.call('XRANGE', key, start, '+', 'COUNT', batch)
    for _, e in ipairs(entries) do
      if keep(e[1]) then
        if #jobs == limit then
          next_cursor = jobs[#jobs][1]
          return
        end
        jobs[#jobs + 1] = {e[1], '', 0, 0, e[2]}
      end
      start = '(' .. e[1]
    end
    if #entries < batch then return end
  end
end
local function pending(id)
  return #redis.call('XPENDING', KEYS[1], 'workers', id, id, 1) > 0
end
if state == 'ready' then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    stream_page(KEYS[1], function(id) return not pending(id) end)
  end
elseif state == 'dead' then
  stream_page(KEYS[3], function() return true end)
elseif state == 'running' then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    local start = '-'
    if cursor ~= '' then start = '(' .. cursor end
    local p = redis.call('XPENDING', KEYS[1], 'workers', start, '+', limit + 1)
    for i, row in ipairs(p) do
      if i > limit then
        next_cursor = jobs[#jobs][1]
        break
      end
      local e = redis.call('XRANGE', KEYS[1], row[1], row[1])
      local fields = {}
      if #e > 0 then fields = e[1][2] end
      jobs[#jobs + 1] = {row[1], row[2], row[3], row[4], fields}
    end
  end
else  -- delayed
  -- Equal due times are ordered by member; `skip` counts those of the cursor's due time
  -- already listed.
  local min, skip = '-inf', 0
  if cursor ~= '' then
    local due, n = string.match(cursor, '^(%d+):(%d+)$')
    min, skip = due, tonumber(n)
  end
  local r = redis.call('ZRANGEBYSCORE', KEYS[2], min, '+inf', 'WITHSCORES', 'LIMIT', skip, limit + 1)
  local last, ties = min, skip
  for i = 1, #r, 2 do
    if (i + 1) / 2 > limit then
      next_cursor = last .. ':' .. ties
      break
    end
    local due = r[i + 1]
    if due == last then ties = ties + 1 else last, ties = due, 1 end
    jobs[#jobs + 1] = {due, '', 0, 0, cmsgpack.unpack(r[i])}
  end
end
local out = {next_cursor}
for _, j in ipairs(jobs) do out[#out + 1] = j end
return out
