-- One learned-reserve key's additions from one replica, merged into the shared state
-- (docs/estimation.md, "Shared across replicas and restarts"). Mirrors
-- io.sluice.core.estimate.ReserveStore's contract; io.sluice.store.memory.InMemoryReserveStore is
-- the same rule in Java.
-- KEYS[1] <namespace>{<pool>}:reserve:<identity> (io.sluice.core.store.PoolKeys), a hash of sums
--   over answers (w, n, la, la2, lr, lr2, a<i>, r<i>; io.sluice.core.estimate.ReserveSnapshot) and t,
--   the time of its last write (ms)
-- KEYS[2] <namespace>{<pool>}:reserve_index, a sorted set: identity -> time of its last write
-- ARGV: window_ms (the stored state halves every window), max_keys (per pool), identity, then
--   field, addition pairs
-- Every stored field is first multiplied by 2^(-(now - t) / window), then the additions are
-- added; the hash expires after 2 windows without a write, the index forgets such keys and keeps
-- the max_keys most recently written.
-- Returns the time of this write (ms).
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local window = tonumber(ARGV[1])
local max_keys = tonumber(ARGV[2])
local cur = redis.call('HGETALL', KEYS[1])
local vals = {}
for i = 1, #cur, 2 do
  vals[cur[i]] = tonumber(cur[i + 1])
end
local factor = 1
if vals['t'] ~= nil then
  factor = math.pow(0.5, math.max(0, now - vals['t']) / window)
end
vals['t'] = nil
for k, v in pairs(vals) do
  vals[k] = v * factor
end
for i = 4, #ARGV, 2 do
  local k = ARGV[i]
  vals[k] = (vals[k] or 0) + tonumber(ARGV[i + 1])
end
local out = {'t', tostring(now)}
for k, v in pairs(vals) do
  if k == 'w' or k == 'n' or v >= 1e-6 or v <= -1e-6 then
    out[#out + 1] = k
    out[#out + 1] = string.format('%.17g', v)
  end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(out))
redis.call('PEXPIRE', KEYS[1], 2 * window)
redis.call('ZADD', KEYS[2], now, ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 2 * window)
local n = redis.call('ZCARD', KEYS[2])
if n > max_keys then
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, n - max_keys - 1)
end
redis.call('PEXPIRE', KEYS[2], 2 * window)
return tostring(now)
