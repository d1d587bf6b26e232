-- clock_probe: the server's wall clock and which server process read it, for the keeper's
-- clock watch on a cluster node (src/lease/server_clock_watch.hpp). A script only so that the
-- key routes it to the node whose leases are watched; it reads and writes no key.
--
-- KEYS[1]  a lock key served by that node (never read)
--
-- Replies
--   {seconds, microseconds, run_id}   TIME's two fields, and run_id from INFO server ('' when
--                                     the caller's ACL user may not run INFO): a restarted or
--                                     replaced server starts the watch afresh
local t = redis.call('TIME')
local info = redis.pcall('INFO', 'server')
local run_id = ''
if type(info) == 'string' then run_id = string.match(info, 'run_id:(%x+)') or '' end
return {t[1], t[2], run_id}
