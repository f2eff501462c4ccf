-- A pool's learned limit shared by its replicas, atomic per pool (docs/scheduling.md, "Adaptive capacity").
-- Mirrors io.sluice.core.adapt.LimitStore's contract; io.sluice.core.adapt.SharedLimit is the same rule in Java.
-- KEYS[1] <namespace>{<pool>}:limit (io.sluice.core.store.PoolKeys), a hash:
--   f, cause, changed_ms, pause_ms (until), ttft, ttft_ms, tpot, tpot_ms
-- ARGV: kind ('' none, 'shrink', 'grow'), from, to, cause, pause_ms, ttft_ns, tpot_ns, min_gap_ms, window_ms
-- Returns {f ('' none), cause, pause_remaining_ms, ttft ('' none), tpot ('' none)} (numbers as strings: Lua numbers would be truncated)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local k = KEYS[1]
local kind = ARGV[1]
local from = tonumber(ARGV[2])
local to = tonumber(ARGV[3])
local cause = ARGV[4]
local pause = tonumber(ARGV[5])
local ttft = tonumber(ARGV[6])
local tpot = tonumber(ARGV[7])
local gap = tonumber(ARGV[8])
local window = tonumber(ARGV[9])
local h = redis.call('HMGET', k, 'f', 'cause', 'changed_ms', 'pause_ms', 'ttft', 'ttft_ms', 'tpot', 'tpot_ms')
local f = tonumber(h[1])
local fcause = h[2] or 'start'
local changed = tonumber(h[3]) or 0
local pause_until = tonumber(h[4]) or 0
local bt = tonumber(h[5])
local bt_ms = tonumber(h[6]) or 0
local bp = tonumber(h[7])
local bp_ms = tonumber(h[8]) or 0
if kind ~= '' then
  local apply = false
  if f == nil then
    apply = true
  elseif kind == 'shrink' then
    apply = to < f
  else
    apply = math.abs(f - from) < 1e-6 and now - changed >= gap
  end
  if apply then
    f = to
    fcause = cause
    changed = now
  end
end
if pause > 0 and now + pause > pause_until then
  pause_until = now + pause
end
if bt ~= nil and now - bt_ms > window then bt = nil end
if bp ~= nil and now - bp_ms > window then bp = nil end
if ttft > 0 and (bt == nil or ttft <= bt) then bt = ttft; bt_ms = now end
if tpot > 0 and (bp == nil or tpot <= bp) then bp = tpot; bp_ms = now end
local fields = {'cause', fcause, 'changed_ms', changed, 'pause_ms', pause_until}
if f ~= nil then table.insert(fields, 'f'); table.insert(fields, string.format('%.17g', f)) end
if bt ~= nil then table.insert(fields, 'ttft'); table.insert(fields, string.format('%.17g', bt)); table.insert(fields, 'ttft_ms'); table.insert(fields, bt_ms) end
if bp ~= nil then table.insert(fields, 'tpot'); table.insert(fields, string.format('%.17g', bp)); table.insert(fields, 'tpot_ms'); table.insert(fields, bp_ms) end
redis.call('HSET', k, unpack(fields))
if bt == nil then redis.call('HDEL', k, 'ttft', 'ttft_ms') end
if bp == nil then redis.call('HDEL', k, 'tpot', 'tpot_ms') end
redis.call('PEXPIRE', k, 2 * window)
local remaining = pause_until - now
if remaining < 0 then remaining = 0 end
return {f and string.format('%.17g', f) or '', fcause, tostring(remaining), bt and string.format('%.17g', bt) or '', bp and string.format('%.17g', bp) or ''}
