// Which Postgres and Redis `npm start` uses, in DESIGN §2's order, and the database itself
// (created when the server is there but the database named in the URL is not).
import postgres from 'postgres';
import { createDatabase, ping } from '../../../shared/db/pool.js';
import { databaseName, withDatabase } from '../../../shared/db/url.js';
import { redactUrl } from '../command.js';
import {
  EMBEDDED_PG_PORT,
  EMBEDDED_REDIS_PORT,
  portAnswers,
  redisAnswers,
  startEmbeddedPostgres,
  startEmbeddedRedis,
  type Service,
} from './services.js';

type Env = Record<string, string | undefined>;
type Say = (line: string) => void;

const LOCAL_PG_URL = 'postgres://postgres@127.0.0.1:5432/tern';
const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';

/** A service as the launcher resolved it; `embedded` names the server it started, if any. */
export interface Resolved {
  url: string;
  embedded: Service | null;
}

export async function resolvePostgres(env: Env, dataDir: string, started: Service[], say: Say): Promise<Resolved> {
  if (env.DATABASE_URL) {
    say(`Postgres: ${redactUrl(env.DATABASE_URL)} (DATABASE_URL)`);
    return { url: env.DATABASE_URL, embedded: null };
  }
  if (await portAnswers(5432)) {
    say(`Postgres: ${LOCAL_PG_URL} (found on the default local port)`);
    return { url: LOCAL_PG_URL, embedded: null };
  }
  say(`Postgres: none given or found; starting an embedded one (data in ${dataDir}/postgres)`);
  const pg = await startEmbeddedPostgres(`${dataDir}/postgres`, EMBEDDED_PG_PORT);
  started.push(pg);
  if (pg.note) say(`Postgres: ${pg.note}`);
  say(`Postgres: ${redactUrl(pg.url)} (embedded)`);
  return { url: pg.url, embedded: pg };
}

export async function resolveRedis(env: Env, dataDir: string, started: Service[], say: Say): Promise<Resolved> {
  if (env.REDIS_URL) {
    say(`Redis: ${redactUrl(env.REDIS_URL)} (REDIS_URL)`);
    return { url: env.REDIS_URL, embedded: null };
  }
  if (await redisAnswers(6379)) {
    say(`Redis: ${LOCAL_REDIS_URL} (found on the default local port)`);
    return { url: LOCAL_REDIS_URL, embedded: null };
  }
  say(`Redis: none given or found; starting redis-server (data in ${dataDir}/redis)`);
  const redis = await startEmbeddedRedis(`${dataDir}/redis`, EMBEDDED_REDIS_PORT);
  started.push(redis);
  say(`Redis: ${redis.url} (embedded)`);
  return { url: redis.url, embedded: redis };
}

/** Connects to the database of `url`, creating it first when the server lacks it. */
export async function ensureDatabase(url: string, say: Say): Promise<void> {
  const probe = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await ping(probe);
    return;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== '3D000') {
      throw new Error(`cannot use Postgres at ${redactUrl(url)} (DATABASE_URL): ${(err as Error).message}`, {
        cause: err,
      });
    }
  } finally {
    await probe.end({ timeout: 1 });
  }
  const name = databaseName(url);
  const admin = postgres(withDatabase(url, 'postgres'), { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await createDatabase(admin, name);
    say(`Postgres: created database ${name}`);
  } catch (err) {
    // Another launcher may have created it at the same instant.
    if ((err as { code?: string }).code !== '42P04') {
      throw new Error(`cannot create database ${name} (DATABASE_URL): ${(err as Error).message}`, {
        cause: err,
      });
    }
  } finally {
    await admin.end({ timeout: 1 });
  }
}
