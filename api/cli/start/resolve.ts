// Which Postgres and Redis `npm start` uses, in DESIGN §2's order, and the database itself
// (created when the server is there but the database named in the URL is not).
import postgres from 'postgres';
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

export async function resolvePostgres(env: Env, dataDir: string, started: Service[], say: Say): Promise<string> {
  if (env.DATABASE_URL) {
    say(`Postgres: ${redactUrl(env.DATABASE_URL)} (DATABASE_URL)`);
    return env.DATABASE_URL;
  }
  if (await portAnswers(5432)) {
    say(`Postgres: ${LOCAL_PG_URL} (found on the default local port)`);
    return LOCAL_PG_URL;
  }
  say(`Postgres: none given or found; starting an embedded one (data in ${dataDir}/postgres)`);
  const pg = await startEmbeddedPostgres(`${dataDir}/postgres`, EMBEDDED_PG_PORT);
  started.push(pg);
  say(`Postgres: ${redactUrl(pg.url)} (embedded)`);
  return pg.url;
}

export async function resolveRedis(env: Env, dataDir: string, started: Service[], say: Say): Promise<string> {
  if (env.REDIS_URL) {
    say(`Redis: ${redactUrl(env.REDIS_URL)} (REDIS_URL)`);
    return env.REDIS_URL;
  }
  if (await redisAnswers(6379)) {
    say(`Redis: ${LOCAL_REDIS_URL} (found on the default local port)`);
    return LOCAL_REDIS_URL;
  }
  say(`Redis: none given or found; starting redis-server (data in ${dataDir}/redis)`);
  const redis = await startEmbeddedRedis(`${dataDir}/redis`, EMBEDDED_REDIS_PORT);
  started.push(redis);
  say(`Redis: ${redis.url} (embedded)`);
  return redis.url;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Connects to the database of `url`, creating it first when the server lacks it. */
export async function ensureDatabase(url: string, say: Say): Promise<void> {
  const probe = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await probe`select 1`;
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
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  target.pathname = '/postgres';
  const admin = postgres(target.toString(), { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${quoteIdent(name)}`);
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
