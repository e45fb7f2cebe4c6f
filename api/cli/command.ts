// What a `tern` command is, and the context it runs in. Connections are opened lazily so that
// `--help` and usage errors never need Postgres, Redis or even a valid environment.
import { loadToolConfig, type ToolConfig } from '../../shared/config.js';
import { createPool, type Sql } from '../../shared/db/pool.js';
import { closeRedis, createRedis, waitReady, type Redis } from '../../shared/redis.js';
import { withLauncherEnv } from './data-dir.js';

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** Shown in the help: `--org <org_id>`. */
  value?: string;
  help: string;
  required?: boolean;
}

export type Values = Record<string, string | boolean | undefined>;

export interface Command {
  /** The words that select it: `key mint`. */
  name: string;
  summary: string;
  options: Record<string, OptionSpec>;
  /** Resolves with the exit status when it is not simply 0 (`tern doctor`: 1 warnings, 2 failures). */
  run(values: Values, ctx: CliContext): Promise<void | number>;
}

/** Wrong use of the command line: exit 2, the message names the flag. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The command could not do its job (unknown org, database down …): exit 1. */
export class CliError extends Error {
  override name = 'CliError';
}

export interface CliContext {
  /** The configuration; no command signs a token, so SECRET_KEY is not required (only checked when set). */
  config(): ToolConfig;
  /** Variables taken from .data/ (npm start's services) because the environment lacked them. */
  fromDataDir: string[];
  /** The environment the command runs with (completed from .data/). */
  env: Record<string, string | undefined>;
  sql(): Sql;
  /** A Redis connection that is ready, or a CliError. */
  redis(): Promise<Redis>;
  out(text: string): void;
  json(value: unknown): void;
  close(): Promise<void>;
}

export function createContext(given: Record<string, string | undefined> = process.env): CliContext {
  const { env, from } = withLauncherEnv(given);
  let config: ToolConfig | null = null;
  let sql: Sql | null = null;
  let redis: Redis | null = null;
  const ctx: CliContext = {
    config: () => (config ??= loadToolConfig(env)),
    fromDataDir: from,
    env,
    sql: () =>
      (sql ??= createPool(ctx.config().databaseUrl, {
        max: 2,
        application: 'tern-cli',
        pooler: ctx.config().databasePooler,
      })),
    async redis() {
      if (!redis) {
        redis = createRedis(ctx.config().redisUrl, 'api', 'tern-cli');
        if (!(await waitReady(redis, 3000))) {
          throw new CliError(
            `cannot reach Redis at ${redactUrl(ctx.config().redisUrl)} (${origin('REDIS_URL', from)})`,
          );
        }
      }
      return redis;
    },
    out: (text) => void process.stdout.write(`${text}\n`),
    json: (value) => void process.stdout.write(`${JSON.stringify(value)}\n`),
    async close() {
      if (redis) await closeRedis(redis);
      if (sql) await sql.end({ timeout: 5 });
    },
  };
  return ctx;
}

/** Where a variable came from, for messages: `DATABASE_URL`, or npm start's record of it. */
export function origin(name: string, fromDataDir: string[]): string {
  return fromDataDir.includes(name) ? `${name} of npm start, from .data/env: is npm start running?` : name;
}

/** A URL without its password, for messages. */
export function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    // A URL that WHATWG does not parse, e.g. redis+cluster://user:password@h1:p1,h2:p2,
    // postgres://user:password@h1:p1,h2:p2/db or
    // redis+sentinel://:password@h1:p1,h2:p2/master?sentinel_password=…
    return raw
      .replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:)[^@/]*@/i, '$1***@')
      .replace(/([?&]sentinel_password=)[^&#]*/i, '$1***');
  }
}

/** `a, b ,c` → ['a','b','c'] (empty items dropped). */
export function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Help text of one command. */
export function commandHelp(cmd: Command): string {
  const flags = Object.entries(cmd.options).map(([name, o]) => {
    const left = `--${name}${o.value ? ` <${o.value}>` : ''}`;
    // A flag longer than the column goes on a line of its own, its help below, aligned.
    const head = left.length < 34 ? left.padEnd(34) : `${left}\n${' '.repeat(36)}`;
    return `  ${head}${o.help}${o.required ? ' (required)' : ''}`;
  });
  flags.push(`  ${'--help'.padEnd(34)}show this help`);
  return `tern ${cmd.name}: ${cmd.summary}\n\nUsage: tern ${cmd.name} [options]\n\nOptions:\n${flags.join('\n')}\n`;
}
