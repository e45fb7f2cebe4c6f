// Types shared by the Koa app, its middleware and its routes.
import type Koa from 'koa';
import type { AuthContext, Authenticator } from '../shared/auth.js';
import type { Config } from '../shared/config.js';
import type { Sql } from '../shared/db/pool.js';
import type { Logger } from '../shared/logger.js';
import type { RouteRule } from '../shared/permissions.js';
import type { PromRecorder } from '../shared/prom/recorder.js';
import type { Queues } from '../shared/queues.js';
import type { RateLimiter } from '../shared/rate-limit.js';
import type { Redis } from '../shared/redis.js';
import type { RedisKeys } from '../shared/redis-keys.js';

export interface AppDeps {
  config: Config;
  sql: Sql;
  /** Fail-fast connection for API commands (rate limit, idempotency, publish). */
  redis: Redis;
  redisKeys: RedisKeys;
  auth: Authenticator;
  rateLimiter: RateLimiter;
  /** Producer side of every queue (fail-fast connection). */
  queues: Queues;
  logger: Logger;
  /** Cluster-wide Prometheus counters (shared/prom/recorder.ts). */
  prom: PromRecorder;
}

export interface ApiState {
  requestId: string;
  /** The matched route's path pattern (api/router.ts); unset when no route matched. */
  route?: string;
  rule?: RouteRule;
  auth?: AuthContext;
  /** Parsed JSON body (undefined when the request had none). */
  body?: unknown;
  /**
   * The ids a first run of this request (same Idempotency-Key) tried to create when its outcome
   * was unknown, by position: the retry creates its records under them, so that each is stored
   * once whatever the first run did (api/middleware/idempotency.ts).
   */
  retryIds?: (string | null)[];
  /** What a handler adds to its audit row (api/middleware/audit.ts). */
  audit?: { action?: string; targetId?: string; detail?: Record<string, unknown> };
  log: Logger;
}

export interface ApiCustom {
  deps: AppDeps;
  /** The matched route's path parameters, percent-decoded (api/router.ts). */
  params: Record<string, string | undefined>;
}

/** The context every route of the web process sees (api/router.ts). */
export type ApiContext = Koa.ParameterizedContext<ApiState, ApiCustom>;

/** A route handler: reads ctx.state.auth (always set) and ctx.state.body, sets ctx.body. */
export type Handler = (ctx: ApiContext & { state: { auth: AuthContext } }) => Promise<void>;

/** Handlers keyed by the permission table's route id, "METHOD /path". */
export type Handlers = Record<string, Handler>;
