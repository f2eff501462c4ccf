-- Retry control's attempts (io.sluice.core.retry.AttemptStore), one atomic step per call.
-- Every key of a call belongs to one pool (io.sluice.core.retry.RetryKeys: <ns>{<pool>}:retry:...).
-- Times are the store's (TIME), in ms. ARGV[1] op:
--   observe: KEYS = {seen, op, refusal, budget}; a key not used (no operation id, no budget) is the
--     refusal key again (same slot) and its flag below is 0: ARGV[12] seen, [13] op, [14] budget,
--     [15] originals the replica did not send (their refills go first).
--     ARGV[2] owner, [3] retry by headers (1|0), [4] refuse in flight (1|0), [5] refuse replay (1|0),
--     [6] refuse early (1|0), [7] seen window ms, [8] in-flight ttl ms, [9] max tokens,
--     [10] token ratio, [11] idle ms.
--     The seen counter goes up (INCR, PEXPIRE window); the claim is SET NX PX ttl with value
--     "run <now> <owner>" (a "done <at> <owner>" replay marker is taken over unless replays are
--     refused); the refusal "<until_ms> <retry_after_s> <reason>" is read; then, unless the request
--     is refused already, the budget bucket: full at first, an original adds the ratio up to max, a
--     retry needs more than max/2 and costs 1 (PX idle).
--     Returns {seen, duplicate (0 none|1 in flight|2 completed), age_ms, claimed (1|0),
--              remembered (1|0), remaining_ms, retry_after_s, reason, allowed (1|0), tokens ('' none)}
--   complete: KEYS = {op}; ARGV[2] owner, [3] replay ms. Compare and delete: only the owner's claim
--     goes, replaced by a "done" marker for the replay window when it is positive. Returns {1|0}.
--   remember: KEYS = {refusal}; ARGV[2] retry after s, [3] reason, [4] keep ms. Returns {1}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]

if op == 'observe' then
  local owner = ARGV[2]
  local retry = ARGV[3] == '1'
  local refuse_in_flight = ARGV[4] == '1'
  local refuse_replay = ARGV[5] == '1'
  local refuse_early = ARGV[6] == '1'
  local window = tonumber(ARGV[7])
  local ttl = tonumber(ARGV[8])
  local max_tokens = tonumber(ARGV[9])
  local ratio = tonumber(ARGV[10])
  local idle = tonumber(ARGV[11])
  local has_seen = ARGV[12] == '1'
  local has_op = ARGV[13] == '1'
  local has_budget = ARGV[14] == '1'
  local deferred = tonumber(ARGV[15] or '0')
  local seen = 0
  if has_seen then
    seen = redis.call('INCR', KEYS[1])
    redis.call('PEXPIRE', KEYS[1], window)
  end
  if seen > 1 then
    retry = true
  end
  local duplicate = 0
  local age = 0
  local claimed = 0
  if has_op then
    local v = redis.call('GET', KEYS[2])
    local state, at = nil, nil
    if v then
      state, at = string.match(v, '^(%a+) (%d+) ')
    end
    if state == 'run' then
      duplicate = 1
      age = now - tonumber(at)
    elseif state == 'done' and refuse_replay then
      duplicate = 2
      age = now - tonumber(at)
    else
      if v then
        redis.call('DEL', KEYS[2])
      end
      if redis.call('SET', KEYS[2], 'run ' .. now .. ' ' .. owner, 'NX', 'PX', ttl) then
        claimed = 1
      end
    end
  end
  local remembered = 0
  local remaining = 0
  local given = 0
  local reason = ''
  local r = redis.call('GET', KEYS[3])
  if r then
    local u, g, why = string.match(r, '^(%d+) (%d+) (.*)$')
    if u then
      remembered = 1
      remaining = tonumber(u) - now
      given = tonumber(g)
      reason = why
    end
  end
  local stop = (duplicate == 1 and refuse_in_flight) or duplicate == 2
    or (retry and remembered == 1 and remaining > 0 and refuse_early)
  local allowed = 1
  local tokens = ''
  if has_budget and not stop then
    local b = tonumber(redis.call('GET', KEYS[4]) or '')
    if b == nil then
      b = max_tokens
    end
    if deferred > 0 then
      b = math.min(max_tokens, b + deferred * ratio)
    end
    if retry then
      if b > max_tokens / 2 then
        b = b - 1
      else
        allowed = 0
      end
    else
      b = math.min(max_tokens, b + ratio)
    end
    redis.call('SET', KEYS[4], string.format('%.17g', b), 'PX', idle)
    tokens = string.format('%.17g', b)
  end
  return {seen, duplicate, age, claimed, remembered, remaining, given, reason, allowed, tokens}
elseif op == 'complete' then
  local v = redis.call('GET', KEYS[1])
  if not v then
    return {0}
  end
  local state, at, who = string.match(v, '^(%a+) (%d+) (.*)$')
  if state ~= 'run' or who ~= ARGV[2] then
    return {0}
  end
  local replay = tonumber(ARGV[3])
  if replay > 0 then
    redis.call('SET', KEYS[1], 'done ' .. now .. ' ' .. who, 'PX', replay)
  else
    redis.call('DEL', KEYS[1])
  end
  return {1}
elseif op == 'remember' then
  local ra = tonumber(ARGV[2])
  redis.call('SET', KEYS[1], (now + ra * 1000) .. ' ' .. ra .. ' ' .. ARGV[3], 'PX', tonumber(ARGV[4]))
  return {1}
end
return redis.error_reply('attempts.lua: unknown op ' .. tostring(op))
