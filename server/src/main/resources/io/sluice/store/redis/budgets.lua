-- Budgets over billing periods: the Ledger rule (io.sluice.core.budget.Ledger), applied atomically
-- to one budget's hash. KEYS[1]: the budget's key (a hash tag: one slot). Time comes from the caller
-- (the window, its start and end, the pace horizon), so that every replica counts the same window.
--
-- ARGV: op (reserve|settle|shrink|read), window id, window start ms, rolling (0|1), pace horizon ms,
-- oldest slice, current slice, limit, burst, thresholds (absolute units, comma-separated, ascending),
-- now ms, ttl ms, then for reserve: cost, reservation id; for settle: the reservation's window id,
-- reserved, actual, reservation id, answered (1: its reserve was answered; 0: it timed out); for
-- shrink, as for settle with reserved the units the reservation is cut to (a cheaper run).
-- KEYS[2] (with a reservation id): the ids of the reservation's window, a hash of id -> units held,
-- or 's' once settled by a settle whose reserve had timed out (deduplication; expires with the
-- window). An id is '' when the call carries none (not deduplicated).
--
-- Hash fields: w (window id), s (spent, calendar), r (reserved), p (pace), pa (pace at ms),
-- a (announced threshold index, -1 none), s:<slice> (spent in a slice, rolling).
local key = KEYS[1]
local op = ARGV[1]
local win = ARGV[2]
local wstart = tonumber(ARGV[3])
local rolling = ARGV[4] == '1'
local horizon = tonumber(ARGV[5])
local oldest = tonumber(ARGV[6])
local cur = tonumber(ARGV[7])
local limit = tonumber(ARGV[8])
local burst = tonumber(ARGV[9])
local now = tonumber(ARGV[11])
local ttl = tonumber(ARGV[12])

local th = {}
for v in string.gmatch(ARGV[10], '[^,]+') do
  th[#th + 1] = tonumber(v)
end
local function reached(used)
  local r = -1
  for i = 1, #th do
    if used >= th[i] then r = i - 1 end
  end
  return r
end

local h = redis.call('HGETALL', key)
local m = {}
for i = 1, #h, 2 do m[h[i]] = h[i + 1] end

local spent, reserved, pace, paceAt, announced
reserved = tonumber(m.r or '0')
pace = tonumber(m.p or '0')
paceAt = tonumber(m.pa or '0')
announced = tonumber(m.a or '-1')
if rolling then
  spent = 0
  for f, v in pairs(m) do
    local idx = string.match(f, '^s:(%-?%d+)$')
    if idx then
      if tonumber(idx) < oldest then
        redis.call('HDEL', key, f)
      else
        spent = spent + tonumber(v)
      end
    end
  end
  local r = reached(spent + reserved)
  if r < announced then announced = r end
elseif m.w ~= win then
  spent, reserved, pace, paceAt, announced = 0, 0, 0, 0, -1
else
  spent = tonumber(m.s or '0')
end

local function save()
  redis.call('HSET', key, 'w', win, 'r', string.format('%.0f', reserved),
    'p', string.format('%.17g', pace), 'pa', string.format('%.0f', paceAt), 'a', announced)
  if not rolling then redis.call('HSET', key, 's', string.format('%.0f', spent)) end
  redis.call('PEXPIRE', key, ttl)
end

if op == 'read' then
  return {spent, reserved, string.format('%.17g', pace), paceAt, announced}
end

if op == 'reserve' then
  local cost = tonumber(ARGV[13])
  local id = ARGV[14] or ''
  if id ~= '' then
    local v = redis.call('HGET', KEYS[2], id)
    if v == 's' then return {'admit', 0, limit - spent - reserved, -1} end
    if v then return {'admit', tonumber(v), limit - spent - reserved, -1} end
  end
  if spent + cost > limit or (cost == 0 and spent >= limit) then
    save()
    return {'exhausted'}
  end
  if spent + reserved + cost > limit then
    save()
    return {'wait', 0, 0}
  end
  if burst > 0 then
    local left = math.max(0, limit - spent - reserved)
    local rate = left / math.max(1, horizon)
    if paceAt == 0 or paceAt < wstart then
      pace = burst
    else
      pace = math.min(burst, pace + rate * math.max(0, now - paceAt))
    end
    paceAt = now
    local needed = math.min(cost, burst)
    if pace < needed then
      local wait
      if rate > 0 then wait = math.ceil((needed - pace) / rate) else wait = horizon end
      save()
      return {'wait', 1, wait}
    end
    pace = pace - cost
  end
  reserved = reserved + cost
  local r = reached(spent + reserved)
  local announce = -1
  if r > announced then announce = r; announced = r end
  save()
  if id ~= '' then
    redis.call('HSET', KEYS[2], id, string.format('%.0f', cost))
    redis.call('PEXPIRE', KEYS[2], ttl)
  end
  return {'admit', cost, limit - spent - reserved, announce}
end

if op == 'settle' then
  local held = tonumber(ARGV[15])
  local actual = tonumber(ARGV[16])
  local id = ARGV[17] or ''
  if id ~= '' then
    local v = redis.call('HGET', KEYS[2], id)
    if v == 's' or (not v and ARGV[18] == '1') then return {-1} end -- settled already
    held = tonumber(v or '0')
    if ARGV[18] == '1' then
      redis.call('HDEL', KEYS[2], id)
    else
      redis.call('HSET', KEYS[2], id, 's')
      redis.call('PEXPIRE', KEYS[2], ttl)
    end
  end
  if not rolling and ARGV[14] ~= win then held = 0 end
  spent = spent + actual
  reserved = math.max(0, reserved - held)
  if burst > 0 then pace = math.min(burst, pace + (held - actual)) end
  local r = reached(spent + reserved)
  local announce = -1
  if r > announced then announce = r; announced = r end
  if rolling then redis.call('HINCRBY', key, 's:' .. string.format('%.0f', cur), string.format('%.0f', actual)) end
  save()
  return {announce}
end
if op == 'shrink' then
  -- cut a running reservation to the units its cheaper run needs: by its id, once (a cut to what
  -- the id holds already, or of an id settled or unknown, or of a calendar window over: nothing)
  local units = tonumber(ARGV[15])
  local id = ARGV[17] or ''
  if id == '' or (not rolling and ARGV[14] ~= win) then return {0} end
  local v = redis.call('HGET', KEYS[2], id)
  if not v or v == 's' or tonumber(v) <= units then return {0} end
  local by = tonumber(v) - units
  redis.call('HSET', KEYS[2], id, string.format('%.0f', units))
  reserved = math.max(0, reserved - by)
  if burst > 0 then pace = math.min(burst, pace + by) end
  save()
  return {by}
end
return redis.error_reply('budgets.lua: unknown op ' .. tostring(op))
