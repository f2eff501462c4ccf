-- Leased places under a cap across replicas, atomic per call: the tenant slots (tiers'
-- maxInFlight), the workflow places (pools.<name>.workflow) and every other owner of leased places.
-- Mirrors io.sluice.core.quota.LeasedPlaces's contract (docs/scheduling.md §11).
-- KEYS[i] <namespace>{<pool>}:<kind>:<owner> (LeasedPlaces.Scope#key), a sorted set:
--         holder -> lease expiry (ms, Redis's clock); one holder per place held, named by the call
--         that took it and carrying its work units ("<replica>|<id>|<work>",
--         io.sluice.store.redis.RedisLeasedPlaces); every key of one call belongs to one pool
-- ARGV[1] op: acquire | release | renew | grant | extend | end | states; ARGV[2] lease ttl (ms)
--   acquire (KEYS[1]): ARGV[3] holder, ARGV[4] work, ARGV[5] maxPlaces (0: none), ARGV[6]
--     maxWork (0: none). Drops the expired holders; refused when maxPlaces are held, or when a
--     place is held and the work held plus this one's is over maxWork; else adds the holder.
--     Returns {granted (1|0), places before, work before}.
--   release (KEYS[1]): ARGV[3] holder: removed (compare and delete: only that holder goes; a late
--     acquire of a call that failed is undone the same way). Returns {removed (1|0)}.
--   renew (KEYS[1..n]): ARGV[2 + i] how many holders of KEYS[i] follow, then the holders, key by
--     key. Each gets a fresh expiry; one that is gone (it expired during a store outage) is written
--     back. Returns {n}.
-- Permit leases (io.sluice.core.permit.PermitLeases, io.sluice.store.redis.RedisPermitLeases), KEYS[1]
-- <namespace>{<pool>}:permit:leases, a holder per permit id; an expired one is kept one ttl more
-- (read as expired, not gone), then pruned (all expired ones at once past 2 x maxLeases records):
--   grant: ARGV[3] id, ARGV[4] maxLeases. Refused when maxLeases are live or the id is there.
--     Returns {granted (1|0), live before}.
--   extend: ARGV[3] id: a live one gets a fresh expiry. Returns {extended (1|0)}.
--   end: ARGV[3] id: removed. Returns {2} when it was live, {1} when its lease had run out (it is
--     then kept as the member "late|<id>" with its expiry, pruned as it would have been), {0}
--     when absent: 2 or 1 for exactly one call.
--   states: ARGV[3..] ids. Returns per id 2 (live), 1 (expired), 3 (released after it expired:
--     "late|<id>" is there), 0 (gone).
-- A holder nobody renews leaves with its lease; every key written expires no sooner than 2 x ttl
-- from now, so an owner nobody holds places of leaves the store.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]
local ttl = tonumber(ARGV[2])
local expiry = string.format('%.0f', now + ttl)

local function keep(key)
  if redis.call('PTTL', key) < ttl * 2 then
    redis.call('PEXPIRE', key, ttl * 2)
  end
end

if op == 'acquire' then
  local key = KEYS[1]
  local holder = ARGV[3]
  local work = tonumber(ARGV[4])
  local maxPlaces = tonumber(ARGV[5])
  local maxWork = tonumber(ARGV[6])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local holders = redis.call('ZRANGE', key, 0, -1)
  local places = #holders
  local held = 0
  for i = 1, places do
    held = held + (tonumber(string.match(holders[i], '|(%d+)$')) or 0)
  end
  if maxPlaces > 0 and places >= maxPlaces then
    return {0, places, held}
  end
  if maxWork > 0 and places > 0 and held + work > maxWork then
    return {0, places, held}
  end
  redis.call('ZADD', key, expiry, holder)
  keep(key)
  return {1, places, held}
elseif op == 'release' then
  return {redis.call('ZREM', KEYS[1], ARGV[3])}
elseif op == 'renew' then
  local n = #KEYS
  local at = 3 + n
  for i = 1, n do
    local key = KEYS[i]
    local count = tonumber(ARGV[2 + i]) or 0
    for j = 1, count do
      redis.call('ZADD', key, expiry, ARGV[at])
      at = at + 1
    end
    if count > 0 then
      keep(key)
    end
  end
  return {n}
elseif op == 'grant' then
  local key = KEYS[1]
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - ttl)
  if redis.call('ZCARD', key) >= 2 * tonumber(ARGV[4]) then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  end
  local live = redis.call('ZCOUNT', key, '(' .. now, '+inf')
  if live >= tonumber(ARGV[4]) or redis.call('ZSCORE', key, ARGV[3]) then
    return {0, live}
  end
  redis.call('ZADD', key, expiry, ARGV[3])
  keep(key)
  return {1, live}
elseif op == 'extend' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[3])
  if not score or tonumber(score) <= now then
    return {0}
  end
  redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[3])
  keep(KEYS[1])
  return {1}
elseif op == 'end' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[3])
  if not score then
    return {0}
  end
  redis.call('ZREM', KEYS[1], ARGV[3])
  if tonumber(score) > now then
    return {2}
  end
  redis.call('ZADD', KEYS[1], score, 'late|' .. ARGV[3])
  return {1}
elseif op == 'states' then
  local out = {}
  for i = 3, #ARGV do
    local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
    if not score then
      out[#out + 1] = redis.call('ZSCORE', KEYS[1], 'late|' .. ARGV[i]) and 3 or 0
    elseif tonumber(score) <= now then
      out[#out + 1] = 1
    else
      out[#out + 1] = 2
    end
  end
  return out
end
return redis.error_reply('leased_places.lua: unknown op ' .. tostring(op))
