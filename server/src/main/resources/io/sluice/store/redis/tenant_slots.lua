-- A tenant's concurrency slots across replicas (tiers' maxInFlight), atomic per call.
-- Mirrors io.sluice.core.quota.TenantSlots's contract (docs/scheduling.md §11).
-- KEYS[i] <namespace>{<pool>}:tenant:<tenantId> (io.sluice.core.store.PoolKeys), a sorted set:
--         holder -> lease expiry (ms, Redis's clock); one holder per slot held, named by the call
--         that took it ("<replica>|<id>", io.sluice.store.redis.RedisTenantSlots); every key of
--         one call belongs to one pool (one slot)
-- ARGV[1] op: acquire | release | renew; ARGV[2] lease ttl (ms)
--   acquire (KEYS[1]): ARGV[3] holder, ARGV[4] cap. Drops the expired holders; if fewer than the
--     cap are left, adds the holder with a fresh expiry. Returns {granted (1|0), total before, now_ms}.
--   release (KEYS[1]): ARGV[3] holder: removed (compare and delete: only that holder goes; a late
--     acquire of a call that failed is undone the same way). Returns {removed (1|0)}.
--   renew (KEYS[1..n]): ARGV[2 + i] how many holders of KEYS[i] follow, then the holders, key by
--     key. Each gets a fresh expiry; one that is gone (it expired during a store outage) is written
--     back. Returns {n}.
-- A holder nobody renews leaves with its lease; every key written expires no sooner than 2 x ttl
-- from now, so a tenant nobody holds slots of leaves the store.
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
  local cap = tonumber(ARGV[4])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local total = redis.call('ZCARD', key)
  if total < cap then
    redis.call('ZADD', key, expiry, holder)
    keep(key)
    return {1, total, now}
  end
  return {0, total, now}
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
end
return redis.error_reply('tenant_slots.lua: unknown op ' .. tostring(op))
