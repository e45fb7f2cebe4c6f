// The Postgres pool (postgres.js, the one SQL client in app code). Short connect timeout so that
// a Postgres outage answers 503 quickly instead of queueing requests behind a dead server.
import postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, never>>;
export type TxSql = postgres.TransactionSql<Record<string, never>>;
/** Either the pool or a transaction: SQL functions accept both. */
export type Db = Sql | TxSql;

export interface PoolOptions {
  max?: number;
  application?: string;
  /** Called for every statement sent (benchmarks count statements per unit of work). */
  onQuery?: (statement: string) => void;
}

export function createPool(url: string, opts: PoolOptions = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    connect_timeout: 3,
    idle_timeout: 30,
    max_lifetime: 60 * 30,
    onnotice: () => {},
    connection: {
      application_name: opts.application ?? 'tern',
      statement_timeout: 15000,
    },
    transform: { undefined: null },
    ...(opts.onQuery ? { debug: (_conn: number, statement: string) => opts.onQuery!(statement) } : {}),
  }) as unknown as Sql;
}
