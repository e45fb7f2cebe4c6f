// The Postgres pool (postgres.js, the one SQL client in app code). Short connect timeout so that
// a Postgres outage answers 503 quickly instead of queueing requests behind a dead server.
import postgres from 'postgres';
import type { DatabasePooler } from '../config.js';

/** The longest a statement may run (a session setting; behind a transaction pooler, the database's). */
export const STATEMENT_TIMEOUT_MS = 15000;

export type Sql = postgres.Sql<Record<string, never>>;
export type TxSql = postgres.TransactionSql<Record<string, never>>;
/** Either the pool or a transaction: SQL functions accept both. */
export type Db = Sql | TxSql;

export interface PoolOptions {
  max?: number;
  /**
   * `transaction`: DATABASE_URL is a pooler in transaction mode (PgBouncer), which hands each
   * transaction to any server connection: no prepared statements (their names would be unknown on
   * the next connection) and no session settings at connect (PgBouncer refuses startup parameters
   * it does not track, and a SET would leak to other clients). The statement timeout then comes
   * from the database's own setting (docs/deployment.md).
   */
  pooler?: DatabasePooler;
  application?: string;
  /** Called for every statement sent (benchmarks count statements per unit of work). */
  onQuery?: (statement: string) => void;
}

/**
 * Seconds before a connection of the pool tries again after a failed connect, by the pool's
 * count of failures in a row. postgres.js's default grows to 20 s, and the count is shared by
 * the pool's connections, so a Postgres restart of a few seconds left a process waiting up to
 * 20 s more once Postgres was back; capped at 2 s here (with jitter), a restart costs seconds.
 */
export function reconnectDelaySeconds(retries: number): number {
  return (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** retries, 2);
}

export function createPool(url: string, opts: PoolOptions = {}): Sql {
  const transactionPooler = opts.pooler === 'transaction';
  return postgres(url, {
    max: opts.max ?? 10,
    connect_timeout: 3,
    idle_timeout: 30,
    max_lifetime: 60 * 30,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    prepare: !transactionPooler,
    connection: {
      application_name: opts.application ?? 'tern',
      ...(transactionPooler ? {} : { statement_timeout: STATEMENT_TIMEOUT_MS }),
    },
    transform: { undefined: null },
    ...(opts.onQuery ? { debug: (_conn: number, statement: string) => opts.onQuery!(statement) } : {}),
  }) as unknown as Sql;
}

/** One round trip to the server: readiness checks and start-up probes. */
export async function ping(db: Db | postgres.Sql): Promise<void> {
  await db`select 1`;
}

/** Creates a database; `admin` is connected to another database of the same server. */
export async function createDatabase(admin: Sql | postgres.Sql, name: string): Promise<void> {
  await admin.unsafe(`create database "${name.replace(/"/g, '""')}"`);
}
