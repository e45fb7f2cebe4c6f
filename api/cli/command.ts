// What a `tern` command is, and the context it runs in. Connections are opened lazily so that
// `--help` and usage errors never need Postgres, Redis or even a valid environment.
import { loadConfig, type Config } from '../../shared/config.js';
import { createPool, type Sql } from '../../shared/db/pool.js';
import { closeRedis, createRedis, waitReady, type Redis } from '../../shared/redis.js';

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
  run(values: Values, ctx: CliContext): Promise<void>;
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
  config(): Config;
  sql(): Sql;
  /** A Redis connection that is ready, or a CliError. */
  redis(): Promise<Redis>;
  out(text: string): void;
  json(value: unknown): void;
  close(): Promise<void>;
}

export function createContext(env: Record<string, string | undefined> = process.env): CliContext {
  let config: Config | null = null;
  let sql: Sql | null = null;
  let redis: Redis | null = null;
  const ctx: CliContext = {
    config: () => (config ??= loadConfig(env)),
    sql: () => (sql ??= createPool(ctx.config().databaseUrl, { max: 2, application: 'tern-cli' })),
    async redis() {
      if (!redis) {
        redis = createRedis(ctx.config().redisUrl, 'api', 'tern-cli');
        if (!(await waitReady(redis, 3000))) {
          throw new CliError(`cannot reach Redis at ${redactUrl(ctx.config().redisUrl)} (REDIS_URL)`);
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

/** A URL without its password, for messages. */
export function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return raw;
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
    return `  ${left.padEnd(34)}${o.help}${o.required ? ' (required)' : ''}`;
  });
  flags.push(`  ${'--help'.padEnd(34)}show this help`);
  return `tern ${cmd.name}: ${cmd.summary}\n\nUsage: tern ${cmd.name} [options]\n\nOptions:\n${flags.join('\n')}\n`;
}
