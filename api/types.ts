// Types shared by the Koa app, its middleware and its routes.
import type { RouterContext } from '@koa/router';
import type Koa from 'koa';
import type { AuthContext, Authenticator } from '../shared/auth.js';
import type { Config } from '../shared/config.js';
import type { Sql } from '../shared/db/pool.js';
import type { Logger } from '../shared/logger.js';
import type { RouteRule } from '../shared/permissions.js';
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
}

export interface ApiState {
  requestId: string;
  rule?: RouteRule;
  auth?: AuthContext;
  /** Parsed JSON body (undefined when the request had none). */
  body?: unknown;
  log: Logger;
}

export interface ApiCustom {
  deps: AppDeps;
}

export type ApiContext = Koa.ParameterizedContext<ApiState, ApiCustom & RouterContext<ApiState, ApiCustom>>;

/** A route handler: reads ctx.state.auth (always set) and ctx.state.body, sets ctx.body. */
export type Handler = (ctx: ApiContext & { state: { auth: AuthContext } }) => Promise<void>;

/** Handlers keyed by the permission table's route id, "METHOD /path". */
export type Handlers = Record<string, Handler>;
