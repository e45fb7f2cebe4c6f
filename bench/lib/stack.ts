// A throw-away install for a benchmark: its own database (created from the migrations) and its
// own Redis prefix, both removed by `drop()`.
import { createOrganization } from '../../shared/bootstrap.js';
import { insertDomain } from '../../shared/db/domains.js';
import { mintKey } from '../../shared/keys.js';
import { setOrgRateLimit } from '../../shared/db/orgs.js';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { migrate } from '../../shared/db/migrate.js';
import { createPool, type Sql } from '../../shared/db/pool.js';
import { Redis } from 'ioredis';

export interface BenchStack {
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  sql: Sql;
  drop(): Promise<void>;
}

/** Postgres server to create the bench database on (any database of it; default: postgres). */
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

export async function createBenchStack(): Promise<BenchStack> {
  const tag = randomBytes(5).toString('hex');
  const name = `tern_bench_${tag}`;
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  const databaseUrl = u.toString();
  const sql = createPool(databaseUrl, { max: 2, application: 'tern-bench' });
  await migrate(sql);
  const redisPrefix = `ternbench:${tag}`;
  return {
    databaseUrl,
    redisUrl: REDIS_URL,
    redisPrefix,
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      const a = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
      try {
        await a.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await a.end();
      }
      const redis = new Redis(REDIS_URL, { lazyConnect: true });
      try {
        await redis.connect();
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}:*`, 'COUNT', 500);
          if (keys.length > 0) await redis.del(...keys);
          cursor = next;
        } while (cursor !== '0');
      } finally {
        redis.disconnect();
      }
    },
  };
}

/**
 * An organization that sends from the verified domain bench.test with a test SEND key, its rate
 * limit raised so that the bucket never refuses (the benchmarks measure sending, not 429s).
 */
export async function createBenchSender(
  stack: BenchStack,
  keyName: string,
): Promise<{ orgId: string; keyId: string; token: string }> {
  const org = await createOrganization(stack.sql, 'tern', { name: 'Bench', adminEmail: 'bench@example.test' });
  const orgId = org.organization.id;
  await setOrgRateLimit(stack.sql, orgId, { perSecond: 100000, burst: 100000 });
  await insertDomain(stack.sql, { orgId, name: 'bench.test', status: 'verified' });
  const { key, token } = await mintKey(stack.sql, 'tern', {
    orgId,
    name: keyName,
    mode: 'test',
    permission: 'SEND',
    domainIds: [],
    createdBy: null,
  });
  return { orgId, keyId: key.id, token };
}
