-- Replica share lease, atomic per pool (docs/decisions/0008-replica-shares.md).
-- Mirrors io.sluice.core.share.ShareStore's contract; ShareLeaseModel in the tests is the same rule.
-- KEYS[1] <namespace>{<pool>}:shares (io.sluice.core.store.PoolKeys), a hash: replica -> "expires_ms held_work held_requests demand_work demand_requests[ classes]"
--   classes: the replica's load by class, opaque here (no spaces): name:demand_w:demand_r:inflight_w:inflight_r:head_w,...
-- ARGV: replica, ttl_ms, cap_work, cap_requests, target_work, target_requests,
--       inuse_work, inuse_requests, demand_work, demand_requests, classes ('' for none)
-- Returns {grant_work, grant_requests, now_ms, then per live peer: id, held_work, held_requests, demand_work, demand_requests, classes}
-- Invariant: a grant is at most the pool less what the other live replicas hold, and a replica
-- holds max(grant, in use), so the held shares never add up to more than the pool. "In use" is the
-- most the replica may have in flight until this answer applies (its in flight, or the limit it
-- admits on meanwhile): what is counted held is never less than what it can have in flight.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = ARGV[1]
local ttl = tonumber(ARGV[2])
local cap_w = tonumber(ARGV[3])
local cap_r = tonumber(ARGV[4])
local target_w = tonumber(ARGV[5])
local target_r = tonumber(ARGV[6])
local use_w = tonumber(ARGV[7])
local use_r = tonumber(ARGV[8])
local entries = redis.call('HGETALL', KEYS[1])
local other_w = 0
local other_r = 0
local out = {0, 0, now}
for i = 1, #entries, 2 do
  local id = entries[i]
  if id ~= me then
    local e, hw, hr, dw, dr, cl = string.match(entries[i + 1], '^(%d+) (%d+) (%d+) (%d+) (%d+) ?(%S*)$')
    if e == nil or tonumber(e) <= now then
      redis.call('HDEL', KEYS[1], id)
    else
      other_w = other_w + tonumber(hw)
      other_r = other_r + tonumber(hr)
      table.insert(out, id)
      table.insert(out, tonumber(hw))
      table.insert(out, tonumber(hr))
      table.insert(out, tonumber(dw))
      table.insert(out, tonumber(dr))
      table.insert(out, cl)
    end
  end
end
local grant_w = math.max(0, math.min(target_w, cap_w - other_w))
local grant_r = math.max(0, math.min(target_r, cap_r - other_r))
local held_w = math.max(grant_w, use_w)
local held_r = math.max(grant_r, use_r)
local classes = ARGV[11] or ''
if string.find(classes, '%s') then
  classes = ''
end
local record = string.format('%.0f %.0f %.0f %.0f %.0f',
  now + ttl, held_w, held_r, tonumber(ARGV[9]), tonumber(ARGV[10]))
if classes ~= '' then
  record = record .. ' ' .. classes
end
redis.call('HSET', KEYS[1], me, record)
redis.call('PEXPIRE', KEYS[1], ttl * 2)
out[1] = grant_w
out[2] = grant_r
return out
