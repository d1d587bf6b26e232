-- find: the job with a given job id, wherever it is (stream, delayed set, dead-letter stream).
-- Reads every job of the queue in one script: O(jobs in the queue), for operators, not hot paths.
-- KEYS[1] queue:{Q}:stream   KEYS[2] queue:{Q}:delayed   KEYS[3] queue:{Q}:dead
-- ARGV[1] job id
-- Returns {} when no job has that id, else {state, where, consumer, idle_ms, deliveries,
-- {field, value, ...}} as list.lua returns a job, state being ready, running, delayed or dead.
-- @include args
local id = text_arg(1)
local function has_id(fields)
  for i = 1, #fields, 2 do
    if fields[i] == 'id' then return fields[i + 1] == id end
  end
  return false
end
local function scan(key)
  local start = '-'
  while true do
    local entries = redis.call('XRANGE', key, start, '+', 'COUNT', 1000)
    for _, e in ipairs(entries) do
      if has_id(e[2]) then return e end
      start = '(' .. e[1]
    end
    if #entries < 1000 then return nil end
  end
end
local e = scan(KEYS[1])
if e then
  local p = redis.call('XPENDING', KEYS[1], 'workers', e[1], e[1], 1)
  if #p > 0 then return {'running', e[1], p[1][2], p[1][3], p[1][4], e[2]} end
  return {'ready', e[1], '', 0, 0, e[2]}
end
local delayed = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
for i = 1, #delayed, 2 do
  local fields = cmsgpack.unpack(delayed[i])
  if has_id(fields) then return {'delayed', delayed[i + 1], '', 0, 0, fields} end
end
e = scan(KEYS[3])
if e then return {'dead', e[1], '', 0, 0, e[2]} end
return {}
