-- Token bucket, atomic per key. Mirrors io.sluice.core.store.TokenBuckets.
-- KEYS[1] bucket hash {t = tokens, u = updated at (ms)}
-- ARGV: capacity, refill_tokens, refill_period_ms, requested, now_ms, force (1 = charge, 0 = take)
-- Returns {granted (1/0), tokens (string), retry_after_ms, full_after_ms}
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2]) / tonumber(ARGV[3])
local requested = tonumber(ARGV[4])
local now = tonumber(ARGV[5])
local force = ARGV[6] == '1'
local state = redis.call('HMGET', KEYS[1], 't', 'u')
local tokens = capacity
local updated = now
if state[1] then
  tokens = tonumber(state[1])
  updated = tonumber(state[2])
  local elapsed = now - updated
  if elapsed > 0 then
    tokens = math.min(capacity, tokens + elapsed * rate)
  end
end
local need = math.max(1, requested)
local granted = force or tokens >= need
if granted then
  tokens = math.min(capacity, tokens - requested)
end
local full = math.max(0, math.ceil((capacity - tokens) / rate))
local retry = 0
if not granted then
  if need > capacity then
    retry = full
  else
    retry = math.max(0, math.ceil((need - tokens) / rate))
  end
end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 'u', string.format('%d', math.max(now, updated)))
redis.call('PEXPIRE', KEYS[1], full + 1000)
local g = 0
if granted then
  g = 1
end
return {g, string.format('%.17g', tokens), retry, full}
