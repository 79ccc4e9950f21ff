"""The store's Lua scripts: each one is a step that must not interleave with another replica's.

Every script returns ``{status, ...}``: ``ok`` or the name of the refusal, which
``store.py`` turns into the error the Store interface promises. Times arrive as
exact decimal strings (Python's ``repr`` of the float), are compared with
``tonumber`` and stored as the same strings, so nothing is rounded on the way.
"""

from __future__ import annotations

# Drop lapsed leases and count them. Expects locals: leases, exp, ids, agents, counters, now.
_EXPIRE = """
local function expire(leases, exp, ids, agents, counters, now)
  local out = {}
  for _, b in ipairs(redis.call('ZRANGEBYSCORE', exp, '-inf', now)) do
    local raw = redis.call('HGET', leases, b)
    if raw then
      local l = cjson.decode(raw)
      redis.call('HDEL', ids, l[1])
      if redis.call('HGET', agents, l[2]) == b then redis.call('HDEL', agents, l[2]) end
      redis.call('HDEL', leases, b)
      out[#out + 1] = raw
    end
    redis.call('ZREM', exp, b)
  end
  if #out > 0 then redis.call('HINCRBYFLOAT', counters, 'leases_expired', #out) end
  return out
end
local function drop_lease(leases, exp, ids, agents, b, id, agent)
  redis.call('HDEL', leases, b)
  redis.call('ZREM', exp, b)
  redis.call('HDEL', ids, id)
  if redis.call('HGET', agents, agent) == b then redis.call('HDEL', agents, agent) end
end
"""

CREATE_TASK = """
-- KEYS: spec meta head runtime tasks; ARGV: id spec_json n_blocks version head_json runtime_json create_id
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[2], 'create') == ARGV[7] then return {'ok'} end  -- this call, retried
  return {'exists'}
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], 'n_blocks', ARGV[3], 'lease', 0, 'proposal', 0, 'create', ARGV[7])
redis.call('HSET', KEYS[3], 'version', ARGV[4], 'json', ARGV[5])
redis.call('HSET', KEYS[4], 'body', ARGV[6])
redis.call('RPUSH', KEYS[5], ARGV[1])
return {'ok'}
"""

FINISH = """
-- KEYS: runtime leases lease_exp lease_ids lease_agents; ARGV: end_json
if redis.call('HEXISTS', KEYS[1], 'body') == 0 then return {'not_found'} end
if redis.call('HSETNX', KEYS[1], 'end', ARGV[1]) == 0 then return {'ok', 0} end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return {'ok', 1}
"""

ACQUIRE_ROUND_LOCK = """
-- KEYS: spec lock fence; ARGV: owner now expires_at
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
local cur = redis.call('HMGET', KEYS[2], 'owner', 'expires_at')
if cur[1] and cur[1] ~= ARGV[1] and tonumber(cur[2]) > tonumber(ARGV[2]) then return {'held'} end
local fence = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[2], 'owner', ARGV[1], 'fence', fence, 'expires_at', ARGV[3])
return {'ok', fence}
"""

RENEW_ROUND_LOCK = """
-- KEYS: lock; ARGV: fence expires_at
if redis.call('HGET', KEYS[1], 'fence') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'expires_at', ARGV[2])
return 1
"""

RELEASE_ROUND_LOCK = """
-- KEYS: lock; ARGV: fence
if redis.call('HGET', KEYS[1], 'fence') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return {'ok'}
"""

COMMIT = """
-- KEYS: fence lock head runtime pending pending_block verdicts rounds counters
-- ARGV: commit_id fence expected_version new_version head_json runtime_body runtime_end round_json
--       n_verdicts (id json)*n_verdicts (counter increment)*
local version = redis.call('HGET', KEYS[3], 'version')
if not version then return {'not_found'} end
if redis.call('HGET', KEYS[4], 'commit') == ARGV[1] then return {'ok'} end  -- a retried commit
local fence = redis.call('GET', KEYS[1]) or '0'
if fence ~= ARGV[2] or redis.call('HGET', KEYS[2], 'fence') ~= ARGV[2] then return {'stale_fence', fence} end
if version ~= ARGV[3] then return {'version_conflict', version} end
if ARGV[4] ~= '' then
  if tonumber(ARGV[4]) <= tonumber(version) then return {'not_increasing', version} end
  redis.call('HSET', KEYS[3], 'version', ARGV[4], 'json', ARGV[5])
end
local n = tonumber(ARGV[9])
for i = 10, 9 + 2 * n, 2 do
  redis.call('HSET', KEYS[7], ARGV[i], ARGV[i + 1])
  redis.call('ZREM', KEYS[5], ARGV[i])
  redis.call('HDEL', KEYS[6], ARGV[i])
end
if ARGV[8] ~= '' then redis.call('RPUSH', KEYS[8], ARGV[8]) end
redis.call('HSET', KEYS[4], 'body', ARGV[6], 'fence', ARGV[2], 'commit', ARGV[1])
if ARGV[7] ~= '' then redis.call('HSETNX', KEYS[4], 'end', ARGV[7]) end
for i = 10 + 2 * n, #ARGV, 2 do redis.call('HINCRBYFLOAT', KEYS[9], ARGV[i], ARGV[i + 1]) end
return {'ok'}
"""

ADD_AGENT = """
-- KEYS: spec agents agent_order tokens; ARGV: id json token_hash
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
if redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) == 1 then redis.call('RPUSH', KEYS[3], ARGV[1]) end
redis.call('HSET', KEYS[4], ARGV[3], ARGV[1])
return {'ok'}
"""

AGENT_BY_TOKEN = """
-- KEYS: tokens agents; ARGV: token_hash
local id = redis.call('HGET', KEYS[1], ARGV[1])
if not id then return {'ok'} end
local raw = redis.call('HGET', KEYS[2], id)
if not raw then return {'ok'} end
return {'ok', raw}
"""

EXPIRE_LEASES = (
    _EXPIRE
    + """
-- KEYS: spec leases lease_exp lease_ids lease_agents counters; ARGV: now
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
local out = expire(KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1])
table.insert(out, 1, 'ok')
return out
"""
)

ACQUIRE_LEASE = (
    _EXPIRE
    + """
-- KEYS: meta leases lease_exp lease_ids lease_agents counters lease_seq pending_block
-- ARGV: now agent version lease_id expires_at prefer (comma-separated blocks, best first; '' for none)
local n_blocks = redis.call('HGET', KEYS[1], 'n_blocks')
if not n_blocks then return {'not_found'} end
expire(KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1])
local mine = redis.call('HGET', KEYS[5], ARGV[2])
if mine then
  local raw = redis.call('HGET', KEYS[2], mine)
  if raw then return {'ok', raw} end
end
local busy = {}
for _, b in ipairs(redis.call('HKEYS', KEYS[2])) do busy[b] = true end
for _, b in ipairs(redis.call('HVALS', KEYS[8])) do busy[b] = true end
local best, best_seq = nil, nil
for s in string.gmatch(ARGV[6] or '', '[^,]+') do
  local v = tonumber(s)
  if v and v >= 0 and v < tonumber(n_blocks) and v == math.floor(v) and not busy[tostring(v)] then
    best = tostring(v)
    break
  end
end
if best == nil then
  local seq = {}
  local flat = redis.call('HGETALL', KEYS[7])
  for i = 1, #flat, 2 do seq[flat[i]] = tonumber(flat[i + 1]) end
  for b = 0, tonumber(n_blocks) - 1 do
    local s = tostring(b)
    if not busy[s] then
      local q = seq[s] or -1
      if best == nil or q < best_seq then best, best_seq = s, q end
    end
  end
end
if best == nil then return {'ok'} end
redis.call('HSET', KEYS[7], best, redis.call('HINCRBY', KEYS[1], 'lease', 1))
local raw = cjson.encode({ARGV[4], ARGV[2], tonumber(ARGV[3]), ARGV[1], ARGV[5], tonumber(best)})
redis.call('HSET', KEYS[2], best, raw)
redis.call('ZADD', KEYS[3], ARGV[5], best)
redis.call('HSET', KEYS[4], ARGV[4], best)
redis.call('HSET', KEYS[5], ARGV[2], best)
redis.call('HINCRBYFLOAT', KEYS[6], 'leases_granted', 1)
return {'ok', raw}
"""
)

RENEW_LEASE = (
    _EXPIRE
    + """
-- KEYS: spec leases lease_exp lease_ids lease_agents counters; ARGV: now lease_id agent expires_at
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
expire(KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1])
local b = redis.call('HGET', KEYS[4], ARGV[2])
if not b then return {'lease_expired'} end
local l = cjson.decode(redis.call('HGET', KEYS[2], b))
if l[2] ~= ARGV[3] then return {'forbidden'} end
l[5] = ARGV[4]
local raw = cjson.encode(l)
redis.call('HSET', KEYS[2], b, raw)
redis.call('ZADD', KEYS[3], ARGV[4], b)
return {'ok', raw}
"""
)

RELEASE_LEASE = (
    _EXPIRE
    + """
-- KEYS: spec leases lease_exp lease_ids lease_agents; ARGV: lease_id agent
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
local b = redis.call('HGET', KEYS[4], ARGV[1])
if not b then return {'ok'} end
local l = cjson.decode(redis.call('HGET', KEYS[2], b))
if l[2] ~= ARGV[2] then return {'forbidden'} end
drop_lease(KEYS[2], KEYS[3], KEYS[4], KEYS[5], b, ARGV[1], ARGV[2])
return {'ok'}
"""
)

ENQUEUE_PROPOSAL = (
    _EXPIRE
    + """
-- KEYS: meta leases lease_exp lease_ids lease_agents counters proposals pending pending_block usage
-- ARGV: now lease_id proposal_id agent block queued_json (usage_field amount)*
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
local known = redis.call('HGET', KEYS[7], ARGV[3])
if known then return {'known', known} end
expire(KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1])
local b = redis.call('HGET', KEYS[4], ARGV[2])
if not b then return {'lease_expired'} end
local l = cjson.decode(redis.call('HGET', KEYS[2], b))
if l[2] ~= ARGV[4] then return {'forbidden'} end
if b ~= ARGV[5] then return {'wrong_block', b} end
drop_lease(KEYS[2], KEYS[3], KEYS[4], KEYS[5], b, ARGV[2], ARGV[4])
redis.call('HSET', KEYS[7], ARGV[3], ARGV[6])
redis.call('ZADD', KEYS[8], redis.call('HINCRBY', KEYS[1], 'proposal', 1), ARGV[3])
redis.call('HSET', KEYS[9], ARGV[3], b)
redis.call('HINCRBYFLOAT', KEYS[6], 'received', 1)
for i = 7, #ARGV, 2 do redis.call('HINCRBYFLOAT', KEYS[10], ARGV[i], ARGV[i + 1]) end
return {'ok'}
"""
)

PENDING = """
-- KEYS: spec pending proposals
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
local out = {'ok'}
if #ids > 0 then
  for _, raw in ipairs(redis.call('HMGET', KEYS[3], unpack(ids))) do
    if raw then out[#out + 1] = raw end
  end
end
return out
"""

QUEUE_STATE = """
-- KEYS: spec pending proposals lease_exp; ARGV: now
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
local n = redis.call('ZCARD', KEYS[2])
local leases = redis.call('ZCOUNT', KEYS[4], '(' .. ARGV[1], '+inf')
local oldest = ''
local first = redis.call('ZRANGE', KEYS[2], 0, 0)
if first[1] then
  local raw = redis.call('HGET', KEYS[3], first[1])
  if raw then oldest = string.format('%.17g', cjson.decode(raw)['received_at']) end
end
return {'ok', n, oldest, leases}
"""

RECORD_ABANDONED = """
-- KEYS: spec abandoned usage counters abandoned_at
-- ARGV: record_id record_json counter_name (usage_field amount)*
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not_found'} end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return {'known'} end
redis.call('ZADD', KEYS[5], cjson.decode(ARGV[2])['at'], ARGV[1])
for i = 4, #ARGV, 2 do redis.call('HINCRBYFLOAT', KEYS[3], ARGV[i], ARGV[i + 1]) end
redis.call('HINCRBYFLOAT', KEYS[4], 'abandoned', 1)
redis.call('HINCRBYFLOAT', KEYS[4], ARGV[3], 1)
return {'ok'}
"""
