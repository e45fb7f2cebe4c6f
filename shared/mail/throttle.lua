-- Per-provider token bucket with an adaptive rate (Redis TIME, one atomic script).
-- KEYS[1] bucket; ARGV: op ('take' | 'slow' | 'peek'), max_rate, min_rate, burst, recover (rate/s gained per s), max_wait_s
-- Returns { wait in ms (as a string), current rate (as a string) }. 'take' reserves a token when
-- the wait is at most max_wait_s (the caller sleeps that long); otherwise reserves nothing.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local h = redis.call('HMGET', KEYS[1], 'rate', 'tokens', 'ts')
local maxr, minr, burst = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local recover, maxwait = tonumber(ARGV[5]), tonumber(ARGV[6])
local rate = tonumber(h[1]) or maxr
local tokens = tonumber(h[2]) or burst
local ts = tonumber(h[3]) or now
local dt = math.max(0, now - ts)
rate = math.min(maxr, rate + recover * dt)
tokens = math.min(burst, tokens + rate * dt)
local wait = 0
if ARGV[1] == 'peek' then
  -- The current (recovered) rate, changing nothing.
  return { '0', tostring(rate) }
end
if ARGV[1] == 'slow' then
  rate = math.max(minr, rate / 2)
  tokens = math.min(tokens, 0)
else
  wait = math.max(0, (1 - tokens) / rate)
  if wait <= maxwait then tokens = tokens - 1 end
end
redis.call('HSET', KEYS[1], 'rate', tostring(rate), 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('EXPIRE', KEYS[1], 86400)
return { tostring(math.floor(wait * 1000)), tostring(rate) }
