// Idempotency-Key (DESIGN §5) for routes whose permission row says `idempotent`. Per API key,
// 24 h: the same key with the same request replays the first response (status and body); with
// another request → 409 idempotency_conflict; while the first is still running → 409
// idempotency_in_progress. Redis is the referee, so several web processes agree: `SET NX` claims
// the key with an in-flight marker, a compare-and-set swaps the marker for the response, and a
// compare-and-delete releases it when the request fails (4xx/5xx) so the client may retry.
// A request answered 504 outcome_unknown (its records may or may not be stored) leaves the key
// holding the ids it tried: a retry with the key takes them over and creates its records under
// the same ids, which stores each once whatever the first run did.
import { createHash, randomBytes } from 'node:crypto';
import type Koa from 'koa';
import type { Redis } from '../../shared/redis.js';
import { ApiError, OutcomeUnknown, validationError } from '../../shared/errors.js';
import { retryTransient } from '../../shared/transient.js';
import type { ApiCustom, ApiState } from '../types.js';

const RESPONSE_TTL_S = 24 * 3600;
// A process that dies mid-request leaves its marker behind; it blocks the key only this long.
const IN_FLIGHT_TTL_S = 60;
const MAX_KEY_LENGTH = 256;

const SWAP = `if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('set', KEYS[1], ARGV[2], 'EX', ARGV[3]) end return false`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

declare module 'ioredis' {
  interface RedisCommander {
    ternIdemSwap(key: string, expected: string, value: string, ttl: number): Promise<unknown>;
    ternIdemRelease(key: string, marker: string): Promise<unknown>;
  }
}

/** The two scripts as commands of the client: EVALSHA, the script text is sent once. */
function scripts(redis: Redis): Redis {
  if (typeof (redis as Partial<Redis>).ternIdemSwap !== 'function') {
    redis.defineCommand('ternIdemSwap', { numberOfKeys: 1, lua: SWAP });
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
interface Unknown {
  state: 'unknown';
  hash: string;
  ids: (string | null)[];
}
type Entry = InFlight | Done | Unknown;

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n`)
    .update(JSON.stringify(body ?? null))
    .digest('hex');
}

type Ctx = Koa.ParameterizedContext<ApiState, ApiCustom>;

function inFlight(hash: string): string {
  return JSON.stringify({ state: 'in_flight', hash, token: randomBytes(12).toString('hex') } satisfies InFlight);
}

/** The key is taken: replay, refuse, or take over an unknown outcome's ids (returns the marker). */
async function alreadyClaimed(ctx: Ctx, redisKey: string, hash: string): Promise<string | null> {
  const raw = await ctx.deps.redis.get(redisKey);
  // Released or expired between the two commands: the caller may simply retry.
  if (raw === null)
    throw new ApiError('idempotency_in_progress', 'A request with this Idempotency-Key just ended; retry');
  const entry = JSON.parse(raw) as Entry;
  if (entry.hash !== hash) {
    throw new ApiError('idempotency_conflict', 'This Idempotency-Key was used with a different request');
  }
  if (entry.state === 'done') {
    ctx.status = entry.status;
    ctx.body = entry.body;
    ctx.set('Idempotent-Replayed', 'true');
    return null;
  }
  // An unknown outcome's ids go to this run (and back to the key if it fails too).
  const marker = entry.state === 'unknown' ? inFlight(hash) : null;
  if (!marker || (await scripts(ctx.deps.redis).ternIdemSwap(redisKey, raw, marker, IN_FLIGHT_TTL_S)) === null) {
    throw new ApiError('idempotency_in_progress', 'A request with this Idempotency-Key is still in progress');
  }
  ctx.state.retryIds = (entry as Unknown).ids;
  return marker;
}

export function idempotency(): Koa.Middleware<ApiState, ApiCustom> {
  return async (ctx, next) => {
    const idemKey = ctx.get('idempotency-key');
    if (ctx.request.headers['idempotency-key'] === undefined) {
      await next();
      return;
    }
    if (idemKey.length < 1 || idemKey.length > MAX_KEY_LENGTH) {
      throw validationError(`header Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters`);
    }
    const redisKey = ctx.deps.redisKeys.idempotency(ctx.state.auth!.key.id, idemKey);
    const hash = requestHash(ctx.method, ctx.path, ctx.state.body);
    let marker: string | null = inFlight(hash);
    if ((await ctx.deps.redis.set(redisKey, marker, 'EX', IN_FLIGHT_TTL_S, 'NX')) !== 'OK') {
      marker = await alreadyClaimed(ctx, redisKey, hash);
      if (marker === null) return;
    }
    try {
      await next();
    } catch (err) {
      await settleFailure(ctx, redisKey, marker, hash, err);
      throw err;
    }
    if (ctx.status >= 400) return await settleFailure(ctx, redisKey, marker, hash, null);
    const done = JSON.stringify({ state: 'done', hash, status: ctx.status, body: ctx.body } satisfies Done);
    const store = () => scripts(ctx.deps.redis).ternIdemSwap(redisKey, marker, done, RESPONSE_TTL_S);
    try {
      await store();
    } catch (err) {
      // The work is done and committed: answer it, and store the answer once Redis is back.
      ctx.state.log.warn({ event: 'IDEMPOTENCY_STORE_FAILED', err }, 'idempotent response not stored yet');
      void storeLater(ctx, store);
    }
  };
}

/**
 * Keeps trying to store a response while the in-flight marker lives: once it expires, a retry
 * with the key runs the request again, which the stored response would have answered.
 */
async function storeLater(ctx: Ctx, store: () => Promise<unknown>): Promise<void> {
  try {
    await retryTransient(store, {
      maxMs: IN_FLIGHT_TTL_S * 1000,
      firstDelayMs: 250,
      stopped: () => ctx.deps.redis.status === 'end',
    });
  } catch (err) {
    ctx.state.log.warn({ event: 'IDEMPOTENCY_STORE_ABANDONED', err }, 'a retry with this key will run again');
  }
}

/**
 * After a failed run: an unknown outcome (this run's, or the one whose ids it took over) stays on
 * the key for the next retry; any other failure releases the key so the client may retry.
 */
async function settleFailure(ctx: Ctx, redisKey: string, marker: string, hash: string, err: unknown) {
  const ids = err instanceof OutcomeUnknown ? err.ids : ctx.state.retryIds;
  try {
    if (ids) {
      const unknown: Unknown = { state: 'unknown', hash, ids };
      await scripts(ctx.deps.redis).ternIdemSwap(redisKey, marker, JSON.stringify(unknown), RESPONSE_TTL_S);
    } else {
      await scripts(ctx.deps.redis).ternIdemRelease(redisKey, marker);
    }
  } catch (e) {
    ctx.state.log.warn({ event: 'IDEMPOTENCY_RELEASE_FAILED', err: e }, 'idempotency key not released');
  }
}
