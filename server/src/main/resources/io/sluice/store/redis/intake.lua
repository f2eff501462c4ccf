-- Background intake's durable queue (RedisJobStore). Every key of a call shares the hash tag
-- "{intake}" of its prefix, so one call is atomic on one node (Cluster included). Layout under
-- base = <quotas.keyPrefix>intake:{intake}: :
--   job:<id>      hash: tenant pool class route model work created expires status body entry
--                 result error (body base64; dropped once the job is done)
--   queue:<pool>  zset of the pool's waiting job ids, scored by the pool's work enqueued before
--                 each (arrival order; the score difference to the head is the work ahead)
--   cum:<pool>    the pool's work ever enqueued (the next score)
--   stream:<pool> the pool's stream: one XADD per job ("id" field) for its consumer group
--   tenant:<t>    hash: count, work of the tenant's waiting jobs (the caps)
--   expiry        zset of waiting job ids by expiry (epoch ms): swept 16 at a time per call
-- ARGV[1] is the command, ARGV[2] the base; the rest per command.
local cmd = ARGV[1]
local base = ARGV[2]

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
  local tk = base .. 'tenant:' .. j[1]
  local c = redis.call('HINCRBY', tk, 'count', -1)
  redis.call('HINCRBY', tk, 'work', -tonumber(j[3]))
  if c <= 0 then
    redis.call('DEL', tk)
  end
  redis.call('PEXPIRE', jk, retention)
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
    'pool', 'result', 'error')
  if not j[1] or j[1] ~= tenant then
    return {0}
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
    'status', 'queued', 'body', ARGV[12], 'entry', entry)
  redis.call('ZADD', q, score, id)
  redis.call('ZADD', base .. 'expiry', ARGV[11], id)
  redis.call('HINCRBY', tk, 'count', 1)
  redis.call('HINCRBY', tk, 'work', work)
  return {1, position, ahead}
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
    redis.call('HSET', jk, 'status', 'cancelled')
    redis.call('HDEL', jk, 'body')
    redis.call('PEXPIRE', jk, ARGV[6])
  end
  return view(id, tenant)
end
return redis.error_reply('intake.lua: unknown command ' .. tostring(cmd))
