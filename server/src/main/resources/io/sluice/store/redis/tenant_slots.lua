-- A tenant's concurrency slots across replicas (tiers' maxInFlight), atomic per call.
-- Mirrors io.sluice.core.quota.TenantSlots's contract (docs/scheduling.md §11).
-- KEYS[i] <namespace>{<pool>}:tenant:<tenantId> (io.sluice.core.store.PoolKeys), a hash:
--         replica -> "expires_ms count"; every key of one call belongs to one pool (one slot)
-- ARGV[1] op: acquire | release | renew; ARGV[2] replica; ARGV[3] lease ttl (ms)
--   acquire (KEYS[1]): ARGV[4] cap. Drops the expired contributions of other replicas; if the live
--     counts add up to less than the cap, this replica's count goes up by one with a fresh expiry.
--     Returns {granted (1|0), total before, now_ms}.
--   release (KEYS[1]): this replica's count goes down by one, never below 0 (the field is deleted
--     at 0). Returns {count after}.
--   renew (KEYS[1..n]): ARGV[3 + i] the slots this replica holds of KEYS[i]. A contribution that is
--     there gets a fresh expiry and keeps its count; one that is gone is written back with the count
--     held. Returns {n}.
-- This replica's own field counts even past its expiry: the call itself shows it is alive.
-- Every key written gets PEXPIRE 2 x ttl, so a tenant nobody holds slots of leaves the store.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]
local me = ARGV[2]
local ttl = tonumber(ARGV[3])

local function parse(v)
  if v == false or v == nil then
    return nil, nil
  end
  local e, c = string.match(v, '^(%d+) (%d+)$')
  if e == nil then
    return nil, nil
  end
  return tonumber(e), tonumber(c)
end

if op == 'acquire' then
  local key = KEYS[1]
  local cap = tonumber(ARGV[4])
  local entries = redis.call('HGETALL', key)
  local total = 0
  local mine = 0
  for i = 1, #entries, 2 do
    local id = entries[i]
    local e, c = parse(entries[i + 1])
    if id == me then
      mine = c or 0
      total = total + mine
    elseif e == nil or e <= now then
      redis.call('HDEL', key, id)
    else
      total = total + c
    end
  end
  if total < cap then
    redis.call('HSET', key, me, string.format('%.0f %.0f', now + ttl, mine + 1))
    redis.call('PEXPIRE', key, ttl * 2)
    return {1, total, now}
  end
  return {0, total, now}
elseif op == 'release' then
  local key = KEYS[1]
  local e, c = parse(redis.call('HGET', key, me))
  if c == nil then
    redis.call('HDEL', key, me)
    return {0}
  end
  c = math.max(0, c - 1)
  if c == 0 then
    redis.call('HDEL', key, me)
  else
    redis.call('HSET', key, me, string.format('%.0f %.0f', e, c))
  end
  return {c}
elseif op == 'renew' then
  for i = 1, #KEYS do
    local key = KEYS[i]
    local held = tonumber(ARGV[3 + i]) or 0
    local e, c = parse(redis.call('HGET', key, me))
    if c == nil then
      c = held
    end
    if c > 0 then
      redis.call('HSET', key, me, string.format('%.0f %.0f', now + ttl, c))
      redis.call('PEXPIRE', key, ttl * 2)
    end
  end
  return {#KEYS}
end
return redis.error_reply('tenant_slots.lua: unknown op ' .. tostring(op))
