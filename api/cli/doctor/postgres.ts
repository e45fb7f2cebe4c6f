// Postgres: a supported version, and `max_connections` enough for the pools the Procfile's
// processes open: each of web, worker, relay and mx opens one pool of DATABASE_POOL_MAX
// connections, times its scale, plus headroom for `release`, the CLI and an operator's psql.
import type { ToolConfig } from '../../../shared/config.js';
import type { Sql } from '../../../shared/db/pool.js';
import { fail, ok, warn, type Check } from './check.js';

/** The oldest major version Tern's SQL runs on, and the oldest one still supported upstream. */
export const MIN_POSTGRES = 13;
export const SUPPORTED_POSTGRES = 14;
export const HEADROOM = 10;
export const POOLED_PROCESSES = ['web', 'worker', 'relay', 'mx'] as const;

export type Scale = Record<(typeof POOLED_PROCESSES)[number], number>;

/** `web=2,worker=4` → the formation (1 each unless named). */
export function parseScale(raw: string | undefined): Scale {
  const scale: Scale = { web: 1, worker: 1, relay: 1, mx: 1 };
  for (const item of (raw ?? '').split(',').filter((s) => s.trim())) {
    const m = /^\s*([a-z]+)\s*=\s*(\d+)\s*$/.exec(item);
    if (!m || !(POOLED_PROCESSES as readonly string[]).includes(m[1]!)) {
      throw new Error(`--scale: "${item}" is not process=count (processes: ${POOLED_PROCESSES.join(', ')})`);
    }
    scale[m[1] as keyof Scale] = Number(m[2]);
  }
  return scale;
}

export async function postgresChecks(sql: Sql, config: ToolConfig, scale: Scale): Promise<Check[]> {
  const [row] = await sql<{ version: string; num: string; max: string; reserved: string; timeout: string }[]>`
    select current_setting('server_version') as version, current_setting('server_version_num') as num,
           current_setting('max_connections') as max, current_setting('superuser_reserved_connections') as reserved,
           current_setting('statement_timeout') as timeout`;
  const major = Math.floor(Number(row!.num) / 10000);
  const checks: Check[] = [];
  const upgrade = `upgrade Postgres to ${SUPPORTED_POSTGRES} or later`;
  if (major < MIN_POSTGRES)
    checks.push(fail('Postgres version', `${row!.version}: Tern needs ${MIN_POSTGRES}+`, upgrade));
  else if (major < SUPPORTED_POSTGRES)
    checks.push(warn('Postgres version', `${row!.version}: out of upstream support`, upgrade));
  else checks.push(ok('Postgres version', row!.version));

  const processes = POOLED_PROCESSES.reduce((n, p) => n + scale[p], 0);
  const need = processes * config.databasePoolMax + HEADROOM;
  const usable = Number(row!.max) - Number(row!.reserved);
  const formation = POOLED_PROCESSES.map((p) => `${p}=${scale[p]}`).join(',');
  const sum = `${processes} processes (${formation}) × DATABASE_POOL_MAX ${config.databasePoolMax} + ${HEADROOM} headroom = ${need}`;
  const fix = `raise max_connections to ${Math.ceil(need / 0.8)} or more, lower DATABASE_POOL_MAX, or put PgBouncer in front`;
  const name = 'Postgres max_connections';
  if (config.databasePooler === 'transaction') {
    checks.push(ok(name, `${usable} usable of ${row!.max}; behind a transaction pooler, its server pool must fit`));
    checks.push(poolerTimeout(row!.timeout));
  } else if (need > usable) checks.push(fail(name, `${usable} usable of ${row!.max} < ${sum}`, fix));
  else if (need > usable * 0.8)
    checks.push(warn(name, `${usable} usable of ${row!.max}: ${sum}, little room to scale`, fix));
  else checks.push(ok(name, `${usable} usable of ${row!.max} ≥ ${sum}`));
  return checks;
}

/**
 * Behind a transaction pooler Tern sets no statement timeout per connection (DATABASE_POOLER):
 * the database's own setting is what stops a runaway statement.
 */
function poolerTimeout(timeout: string): Check {
  const name = 'Postgres statement_timeout';
  if (timeout !== '0') return ok(name, `${timeout} (the database's setting, as DATABASE_POOLER=transaction needs)`);
  return warn(
    name,
    'none: behind a transaction pooler Tern cannot set its 15 s timeout per connection',
    "ALTER DATABASE <name> SET statement_timeout = '15s' (or PgBouncer's query_timeout)",
  );
}
