-- Token bucket, one per API key (DESIGN §9). Time comes from Redis (TIME), never from the
-- callers, so several web processes with drifting clocks share one honest bucket.
-- Amounts are kept in micro-tokens (integers) to avoid float formatting in HSET.
-- KEYS[1] bucket
-- ARGV[1] rate (tokens per second), ARGV[2] burst (bucket size), ARGV[3] cost,
-- ARGV[4] lease: tokens wanted beyond `cost`, granted only as far as the bucket holds them,
-- ARGV[5] lease window (ms): a process spends a lease within one window of its grant; sent on
--         every call, leasing or not, so that every call honours the leases of the others
-- Returns { allowed (0|1), remaining tokens (floor), ms until full, ms until `cost` is available,
--           lease tokens granted }
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2]) * 1000000
local cost = tonumber(ARGV[3]) * 1000000
local lease = tonumber(ARGV[4] or '0')
local window = tonumber(ARGV[5] or '0') * 1000

local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts', 'lw', 'lc', 'lp')
local tokens = tonumber(b[1])
local ts = tonumber(b[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end

-- Tokens leased in the current and the previous window (lc, lp) may still be spent in some
-- process's memory: the bucket refills only up to burst minus them, so that the bucket and the
-- leases together never hold more than the burst.
local lw = tonumber(b[3]) or 0
local lc = tonumber(b[4]) or 0
local lp = tonumber(b[5]) or 0
local cap = burst
if window > 0 then
  local w = math.floor(now / window)
  if w == lw + 1 then
    lp = lc
    lc = 0
  elseif w ~= lw then
    lp = 0
    lc = 0
  end
  lw = w
  cap = math.max(0, burst - (lc + lp) * 1000000)
end

local elapsed = now - ts
if elapsed < 0 then elapsed = 0 end
if tokens < cap then
  tokens = math.min(cap, tokens + elapsed * rate)
elseif tokens > cap then
  tokens = cap -- the organization lowered its burst
end

local allowed = 0
local wait_us = 0
local granted = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
  if lease > 0 and window > 0 then
    -- At most half the burst is out on lease at once: the cap never falls below burst / 2, so
    -- busy leasing cannot starve the bucket's own refill.
    local budget = math.floor(burst / 2000000) - lc - lp
    granted = math.max(0, math.min(lease, math.floor(tokens / 1000000), budget))
    tokens = tokens - granted * 1000000
    lc = lc + granted
  end
else
  wait_us = math.ceil((cost - tokens) / rate)
end
tokens = math.floor(tokens)
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now, 'lw', lw, 'lc', lc, 'lp', lp)
local full_us = math.ceil((burst - tokens) / rate)
redis.call('PEXPIRE', KEYS[1], math.ceil((full_us + 2 * window) / 1000) + 1000)
return { allowed, math.floor(tokens / 1000000), math.ceil(full_us / 1000), math.ceil(wait_us / 1000), granted }
