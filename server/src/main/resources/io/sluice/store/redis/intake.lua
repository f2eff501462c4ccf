-- Background intake's durable queue (RedisJobStore). Every key of a call shares the hash tag
-- "{intake}" of its prefix, so one call is atomic on one node (Cluster included). Layout under
-- base = <quotas.keyPrefix>intake:{intake}: :
--   job:<id>      hash: tenant pool class route model work created expires status body entry
--                 result error (body base64; dropped once the job is done); "running" once a
--                 claimed job's dispatched request was admitted ("start"): before that a claimed
--                 job reads "queued"
--   queue:<pool>  zset of the pool's waiting job ids, scored by the pool's work enqueued before
--                 each (arrival order; the score difference to the head is the work ahead)
--   cum:<pool>    the pool's work ever enqueued (the next score)
--   stream:<pool> the pool's stream: one XADD per job ("id" field) for its consumer group
--   tenant:<t>    hash: count, work of the tenant's waiting jobs (the caps)
--   expiry        zset of waiting job ids by expiry (epoch ms): swept 16 at a time per call
--   expired:<pool> the pool's jobs expired waiting, not yet handed out by "backlog" (GETDEL)
--   claims:<pool> zset of the pool's claimed job ids, scored by "started" (a job given back: its
--                 creation time less 1e15, so before any claim and in arrival order); the claim
--                 finds the oldest lapsed or given-back one here, however many run ahead of it
-- Claims go through the stream's consumer group "sluice": a claimed entry stays pending until its
-- job completes; one pending longer than the lease (by the job's "started", the callers' clock) is
-- claimed again by the next replica that asks.
-- ARGV[1] is the command, ARGV[2] the base; the rest per command.
local cmd = ARGV[1]
local base = ARGV[2]

-- the tenant's counts give the job back, once (field "held" while it waits or runs)
local function release(jk)
  local j = redis.call('HMGET', jk, 'tenant', 'work', 'held')
  if not j[3] then
    return false
  end
  redis.call('HDEL', jk, 'held')
  local tk = base .. 'tenant:' .. j[1]
  local c = redis.call('HINCRBY', tk, 'count', -1)
  redis.call('HINCRBY', tk, 'work', -tonumber(j[2]))
  if c <= 0 then
    redis.call('DEL', tk)
  end
  return true
end

-- a claimed job is over: its body dropped, its stream entry acknowledged and deleted, kept
-- retention ms
local function ended(jk, pool, entry, retention)
  redis.call('HDEL', jk, 'body')
  redis.call('ZREM', base .. 'claims:' .. pool, string.sub(jk, #base + 5))
  local stream = base .. 'stream:' .. pool
  redis.call('XACK', stream, 'sluice', entry)
  redis.call('XDEL', stream, entry)
  redis.call('PEXPIRE', jk, retention)
end

local function finish(id, status, retention)
  local jk = base .. 'job:' .. id
  local j = redis.call('HMGET', jk, 'tenant', 'pool', 'work', 'status')
  redis.call('ZREM', base .. 'expiry', id)
  if not j[1] or j[4] ~= 'queued' then
    return
  end
  redis.call('HSET', jk, 'status', status)
  redis.call('HDEL', jk, 'body')
  redis.call('ZREM', base .. 'queue:' .. j[2], id)
  release(jk)
  redis.call('PEXPIRE', jk, retention)
  if status == 'expired' then
    redis.call('INCR', base .. 'expired:' .. j[2])
  end
end

local function sweep(now, retention)
  local due = redis.call('ZRANGEBYSCORE', base .. 'expiry', '-inf', now, 'LIMIT', 0, 16)
  for _, id in ipairs(due) do
    finish(id, 'expired', retention)
  end
end

-- status, model, work, created, expires, position, ahead, result, error, pool
local function view(id, tenant)
  local jk = base .. 'job:' .. id
  local j = redis.call('HMGET', jk, 'tenant', 'status', 'model', 'work', 'created', 'expires',
    'pool', 'result', 'error', 'running')
  if not j[1] or j[1] ~= tenant then
    return {0}
  end
  if j[2] == 'in_progress' and not j[10] then
    j[2] = 'queued' -- claimed, its request not admitted yet (it may be given back)
  end
  local position, ahead = 0, 0
  if j[2] == 'queued' then
    local q = base .. 'queue:' .. j[7]
    local rank = redis.call('ZRANK', q, id)
    if rank then
      position = rank
      local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
      ahead = tonumber(redis.call('ZSCORE', q, id)) - tonumber(head[2])
    end
  end
  return {1, j[2], j[3] or '', j[4], j[5], j[6], position, ahead, j[8] or '', j[9] or '', j[7]}
end

if cmd == 'enqueue' then
  -- ARGV: 3 id, 4 tenant, 5 pool, 6 class, 7 route, 8 model, 9 work, 10 created, 11 expires,
  -- 12 body, 13 maxJobs, 14 maxWork, 15 retention
  local id, tenant, pool = ARGV[3], ARGV[4], ARGV[5]
  local work = tonumber(ARGV[9])
  sweep(tonumber(ARGV[10]), ARGV[15])
  local tk = base .. 'tenant:' .. tenant
  local t = redis.call('HMGET', tk, 'count', 'work')
  local count, queued = tonumber(t[1] or '0'), tonumber(t[2] or '0')
  if count + 1 > tonumber(ARGV[13]) then
    return {0, 'count'}
  end
  if queued + work > tonumber(ARGV[14]) then
    return {0, 'work'}
  end
  local q = base .. 'queue:' .. pool
  local position = redis.call('ZCARD', q)
  local ahead = 0
  local score = redis.call('INCRBY', base .. 'cum:' .. pool, work) - work
  if position > 0 then
    local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
    ahead = score - tonumber(head[2])
  end
  local entry = redis.call('XADD', base .. 'stream:' .. pool, '*', 'id', id)
  redis.call('HSET', base .. 'job:' .. id, 'tenant', tenant, 'pool', pool, 'class', ARGV[6],
    'route', ARGV[7], 'model', ARGV[8], 'work', work, 'created', ARGV[10], 'expires', ARGV[11],
    'status', 'queued', 'body', ARGV[12], 'entry', entry, 'held', 1, 'attempts', 0)
  redis.call('ZADD', q, score, id)
  redis.call('ZADD', base .. 'expiry', ARGV[11], id)
  redis.call('HINCRBY', tk, 'count', 1)
  redis.call('HINCRBY', tk, 'work', work)
  -- the 4th: the pool's work that has left its queue so far (the head's score), for QueueDrain
  return {1, position, ahead, score - ahead}
elseif cmd == 'read' then
  -- ARGV: 3 id, 4 tenant, 5 now, 6 retention
  sweep(tonumber(ARGV[5]), ARGV[6])
  return view(ARGV[3], ARGV[4])
elseif cmd == 'cancel' then
  -- ARGV: 3 id, 4 tenant, 5 now, 6 retention
  sweep(tonumber(ARGV[5]), ARGV[6])
  local id, tenant = ARGV[3], ARGV[4]
  local jk = base .. 'job:' .. id
  local j = redis.call('HMGET', jk, 'tenant', 'status')
  if not j[1] or j[1] ~= tenant then
    return {0}
  end
  if j[2] == 'queued' then
    finish(id, 'cancelled', ARGV[6])
  elseif j[2] == 'in_progress' then
    -- its replica's completion gives the caps back and drops the result
    redis.call('HSET', jk, 'status', 'cancelled')
  end
  return view(id, tenant)
elseif cmd == 'claim' then
  -- ARGV: 3 pool, 4 consumer, 5 now, 6 lease, 7 retention
  local pool, now = ARGV[3], tonumber(ARGV[5])
  local stream = base .. 'stream:' .. pool
  pcall(redis.call, 'XGROUP', 'CREATE', stream, 'sluice', '0', 'MKSTREAM')
  sweep(now, ARGV[7])
  local claims = base .. 'claims:' .. pool
  for _ = 1, 16 do
    local entry, id
    -- a claim older than the lease (on the callers' clock, field "started": its replica died) or
    -- given back ("release"), the oldest first
    local due = redis.call('ZRANGEBYSCORE', claims, '-inf', now - tonumber(ARGV[6]), 'LIMIT', 0, 1)
    if due[1] then
      local e = redis.call('HGET', base .. 'job:' .. due[1], 'entry')
      if e and #redis.call('XCLAIM', stream, 'sluice', ARGV[4], 0, e) > 0 then
        entry, id = e, due[1]
      else
        redis.call('ZREM', claims, due[1]) -- its job or its stream entry is gone
      end
    end
    -- claims made before the claims zset (the first 16 pending entries, as before)
    for _, p in ipairs(entry and {} or redis.call('XPENDING', stream, 'sluice', '-', '+', 16)) do
      local rows = redis.call('XRANGE', stream, p[1], p[1])
      local jid = rows[1] and rows[1][2][2]
      local started = jid and redis.call('HGET', base .. 'job:' .. jid, 'started')
      if not jid or not started or now - tonumber(started) >= tonumber(ARGV[6]) then
        redis.call('XCLAIM', stream, 'sluice', ARGV[4], 0, p[1])
        entry, id = p[1], jid or ''
        break
      end
    end
    if not entry then
      local r = redis.call('XREADGROUP', 'GROUP', 'sluice', ARGV[4], 'COUNT', 1, 'STREAMS', stream,
        '>')
      if not r or not r[1] or not r[1][2][1] then
        return {0}
      end
      entry, id = r[1][2][1][1], r[1][2][1][2][2]
    end
    local jk = base .. 'job:' .. id
    local j = redis.call('HMGET', jk, 'status', 'expires', 'tenant', 'class', 'route', 'body',
      'work')
    if j[1] == 'queued' and tonumber(j[2]) <= now then
      finish(id, 'expired', ARGV[7])
      j[1] = 'expired'
    end
    if j[1] == 'queued' or j[1] == 'in_progress' then
      local score = redis.call('ZSCORE', base .. 'queue:' .. pool, id)
      if score then -- its place, should it be given back ("release")
        redis.call('HSET', jk, 'score', score)
      end
      redis.call('ZREM', base .. 'queue:' .. pool, id)
      redis.call('ZREM', base .. 'expiry', id)
      local attempt = redis.call('HINCRBY', jk, 'attempts', 1)
      redis.call('HSET', jk, 'status', 'in_progress', 'started', now)
      redis.call('HDEL', jk, 'running')
      redis.call('ZADD', claims, ARGV[5], id)
      return {1, id, j[3], j[4], j[5], j[6], attempt, tonumber(j[7] or '0')}
    end
    -- done, cancelled, expired or gone: nothing to run (a job cancelled while its replica ran it
    -- and died gives its tenant's counts back here)
    release(jk)
    redis.call('ZREM', claims, id)
    redis.call('XACK', stream, 'sluice', entry)
    redis.call('XDEL', stream, entry)
  end
  return {0}
elseif cmd == 'backlog' then
  -- ARGV: 3 pool, 4 now, 5 retention
  sweep(tonumber(ARGV[4]), ARGV[5])
  local q = base .. 'queue:' .. ARGV[3]
  local waiting = redis.call('ZCARD', q)
  local oldest = -1
  -- the pool's work that has left its queue so far: the head's score, all of it when none waits
  local drained = tonumber(redis.call('GET', base .. 'cum:' .. ARGV[3]) or '0')
  if waiting > 0 then
    local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
    oldest = tonumber(redis.call('HGET', base .. 'job:' .. head[1], 'created') or '-1')
    drained = tonumber(head[2])
  end
  local gone = tonumber(redis.call('GETDEL', base .. 'expired:' .. ARGV[3]) or '0')
  return {waiting, oldest, gone, drained}
elseif cmd == 'release' then
  -- ARGV: 3 id, 4 attempt, 5 now, 6 retention. The stream entry stays pending: without "started"
  -- the next claim takes it at once (XCLAIM), as a lapsed lease.
  local id = ARGV[3]
  local jk = base .. 'job:' .. id
  local j = redis.call('HMGET', jk, 'status', 'pool', 'entry', 'attempts', 'expires', 'score',
    'held')
  if not j[1] or not j[7] or j[4] ~= ARGV[4] then
    return {0}
  end
  if j[1] == 'cancelled' then -- cancelled while claimed: ends as its completion would
    release(jk)
    ended(jk, j[2], j[3], ARGV[6])
    return {1}
  end
  if j[1] ~= 'in_progress' then
    return {0}
  end
  redis.call('HSET', jk, 'status', 'queued')
  redis.call('HDEL', jk, 'started', 'running')
  local created = tonumber(redis.call('HGET', jk, 'created') or '0')
  redis.call('ZADD', base .. 'claims:' .. j[2], string.format('%.0f', created - 1e15), id)
  local q = base .. 'queue:' .. j[2]
  local score = j[6] or redis.call('GET', base .. 'cum:' .. j[2]) or '0'
  redis.call('ZADD', q, score, id)
  redis.call('ZADD', base .. 'expiry', j[5], id)
  if tonumber(j[5]) <= tonumber(ARGV[5]) then
    finish(id, 'expired', ARGV[6])
  end
  return {1}
elseif cmd == 'start' then
  -- ARGV: 3 id. A claimed job's dispatched request was admitted: it reads in_progress from here
  local jk = base .. 'job:' .. ARGV[3]
  local j = redis.call('HMGET', jk, 'status', 'running')
  if j[1] ~= 'in_progress' or j[2] then
    return {0}
  end
  redis.call('HSET', jk, 'running', 1)
  return {1}
elseif cmd == 'complete' then
  -- ARGV: 3 id, 4 status, 5 result, 6 error, 7 retention
  local jk = base .. 'job:' .. ARGV[3]
  local j = redis.call('HMGET', jk, 'status', 'pool', 'entry')
  if not j[1] or (j[1] ~= 'in_progress' and j[1] ~= 'cancelled') or not release(jk) then
    return {0}
  end
  if j[1] == 'in_progress' then
    redis.call('HSET', jk, 'status', ARGV[4], 'result', ARGV[5], 'error', ARGV[6])
  end
  ended(jk, j[2], j[3], ARGV[7])
  return {1}
end
return redis.error_reply('intake.lua: unknown command ' .. tostring(cmd))
