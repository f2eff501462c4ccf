-- An agent run's turns (agentRuns): per run, turn and pool the calls shed and the retries that
-- followed, atomic per call. Mirrors io.sluice.core.quota.TurnLedger's contract (docs/mcp.md).
-- KEYS[1] <namespace>{<pool>}:turn:<run>:<turn> (TurnLedger.key), a hash: shed, retry
-- ARGV[1] op: call | shed; ARGV[2] ttl (ms): the key expires ttl after its last write
--   call: ARGV[3] maxRetries. No shed: {1, 0, 0}, nothing written. Else the retries + 1 past
--     maxRetries: {0, sheds, retries} (not counted); else counted: {1, sheds, retries + 1}.
--   shed: HINCRBY shed 1. Returns {sheds}.
local key = KEYS[1]
local op = ARGV[1]
local ttl = tonumber(ARGV[2])
if op == 'call' then
  local sheds = tonumber(redis.call('HGET', key, 'shed') or '0')
  if sheds == 0 then
    return {1, 0, 0}
  end
  local retries = tonumber(redis.call('HGET', key, 'retry') or '0')
  if retries + 1 > tonumber(ARGV[3]) then
    return {0, sheds, retries}
  end
  retries = redis.call('HINCRBY', key, 'retry', 1)
  redis.call('PEXPIRE', key, ttl)
  return {1, sheds, retries}
elseif op == 'shed' then
  local sheds = redis.call('HINCRBY', key, 'shed', 1)
  redis.call('PEXPIRE', key, ttl)
  return {sheds}
end
return redis.error_reply('turn_ledger.lua: unknown op ' .. tostring(op))
