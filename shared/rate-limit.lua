-- Token bucket, one per API key (DESIGN §9). Time comes from Redis (TIME), never from the
-- callers, so several web processes with drifting clocks share one honest bucket.
-- Amounts are kept in micro-tokens (integers) to avoid float formatting in HSET.
-- KEYS[1] bucket
-- ARGV[1] rate (tokens per second), ARGV[2] burst (bucket size), ARGV[3] cost,
-- ARGV[4] lease: tokens wanted beyond `cost`, taken only as far as the bucket holds them
-- Returns { allowed (0|1), remaining tokens (floor), ms until full, ms until `cost` is available,
--           lease tokens granted }
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2]) * 1000000
local cost = tonumber(ARGV[3]) * 1000000
local lease = tonumber(ARGV[4] or '0')

local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(b[1])
local ts = tonumber(b[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
local elapsed = now - ts
if elapsed < 0 then elapsed = 0 end
tokens = math.min(burst, tokens + elapsed * rate)

local allowed = 0
local wait_us = 0
local granted = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
  if lease > 0 then
    granted = math.min(lease, math.floor(tokens / 1000000))
    tokens = tokens - granted * 1000000
  end
else
  wait_us = math.ceil((cost - tokens) / rate)
end
tokens = math.floor(tokens)
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
local full_us = math.ceil((burst - tokens) / rate)
redis.call('PEXPIRE', KEYS[1], math.ceil(full_us / 1000) + 1000)
return { allowed, math.floor(tokens / 1000000), math.ceil(full_us / 1000), math.ceil(wait_us / 1000), granted }
