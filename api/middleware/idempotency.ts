// Idempotency-Key (DESIGN §5) for routes whose permission row says `idempotent`. Per API key,
// 24 h: the same key with the same request replays the first response (status and body); with
// another request → 409 idempotency_conflict; while the first is still running → 409
// idempotency_in_progress. Redis is the referee, so several web processes agree: `SET NX` claims
// the key with an in-flight marker, a compare-and-set swaps the marker for the response, and a
// compare-and-delete releases it when the request fails (4xx/5xx) so the client may retry.
import { createHash, randomBytes } from 'node:crypto';
import type Koa from 'koa';
import type { Redis } from '../../shared/redis.js';
import { ApiError, validationError } from '../../shared/errors.js';
import type { ApiCustom, ApiState } from '../types.js';

const RESPONSE_TTL_S = 24 * 3600;
// A process that dies mid-request leaves its marker behind; it blocks the key only this long.
const IN_FLIGHT_TTL_S = 60;
const MAX_KEY_LENGTH = 256;

const COMPLETE = `if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('set', KEYS[1], ARGV[2], 'EX', ARGV[3]) end return false`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

declare module 'ioredis' {
  interface RedisCommander {
    ternIdemComplete(key: string, marker: string, done: string, ttl: number): Promise<unknown>;
    ternIdemRelease(key: string, marker: string): Promise<unknown>;
  }
}

/** The two scripts as commands of the client: EVALSHA, the script text is sent once. */
function scripts(redis: Redis): Redis {
  if (typeof (redis as Partial<Redis>).ternIdemComplete !== 'function') {
    redis.defineCommand('ternIdemComplete', { numberOfKeys: 1, lua: COMPLETE });
    redis.defineCommand('ternIdemRelease', { numberOfKeys: 1, lua: RELEASE });
  }
  return redis;
}

interface InFlight {
  state: 'in_flight';
  hash: string;
  token: string;
}
interface Done {
  state: 'done';
  hash: string;
  status: number;
  body: unknown;
}
type Entry = InFlight | Done;

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n`)
    .update(JSON.stringify(body ?? null))
    .digest('hex');
}

export function idempotency(): Koa.Middleware<ApiState, ApiCustom> {
  return async (ctx, next) => {
    const idemKey = ctx.get('idempotency-key');
    if (ctx.request.headers['idempotency-key'] === undefined) return await next();
    if (idemKey.length < 1 || idemKey.length > MAX_KEY_LENGTH) {
      throw validationError(`header Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters`);
    }
    const { redis, redisKeys } = ctx.deps;
    const redisKey = redisKeys.idempotency(ctx.state.auth!.key.id, idemKey);
    const hash = requestHash(ctx.method, ctx.path, ctx.state.body);
    const marker = JSON.stringify({
      state: 'in_flight',
      hash,
      token: randomBytes(12).toString('hex'),
    } satisfies InFlight);

    const claimed = await redis.set(redisKey, marker, 'EX', IN_FLIGHT_TTL_S, 'NX');
    if (claimed !== 'OK') {
      const raw = await redis.get(redisKey);
      // Released or expired between the two commands: the caller may simply retry.
      if (raw === null)
        throw new ApiError('idempotency_in_progress', 'A request with this Idempotency-Key just ended; retry');
      const entry = JSON.parse(raw) as Entry;
      if (entry.hash !== hash) {
        throw new ApiError('idempotency_conflict', 'This Idempotency-Key was used with a different request');
      }
      if (entry.state === 'in_flight') {
        throw new ApiError('idempotency_in_progress', 'A request with this Idempotency-Key is still in progress');
      }
      ctx.status = entry.status;
      ctx.body = entry.body;
      ctx.set('Idempotent-Replayed', 'true');
      return;
    }

    try {
      await next();
    } catch (err) {
      await release(ctx, redisKey, marker);
      throw err;
    }
    if (ctx.status >= 400) {
      await release(ctx, redisKey, marker);
      return;
    }
    const done: Done = { state: 'done', hash, status: ctx.status, body: ctx.body };
    try {
      await scripts(redis).ternIdemComplete(redisKey, marker, JSON.stringify(done), RESPONSE_TTL_S);
    } catch (err) {
      // The work is done and committed: answer it. A retry after the marker expires repeats it.
      ctx.state.log.warn({ event: 'IDEMPOTENCY_STORE_FAILED', err }, 'idempotent response not stored');
    }
  };
}

async function release(ctx: Koa.ParameterizedContext<ApiState, ApiCustom>, redisKey: string, marker: string) {
  try {
    await scripts(ctx.deps.redis).ternIdemRelease(redisKey, marker);
  } catch (err) {
    ctx.state.log.warn({ event: 'IDEMPOTENCY_RELEASE_FAILED', err }, 'idempotency key not released');
  }
}
