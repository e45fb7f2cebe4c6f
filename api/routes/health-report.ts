// GET /healthz?verbose=1: why the install is or is not healthy, for a person or a probe that
// wants more than /readyz's yes/no. Each dependency with its latency (or its error), the
// migrations applied against the files in sql/, and per queue its workers and job counts.
// `status`: `ok`; `degraded` (pending migrations, or a queue no worker consumes); `unavailable`
// (Postgres or Redis does not answer: HTTP 503).
import { appliedMigrations, listMigrations } from '../../shared/db/migrate.js';
import { ping } from '../../shared/db/pool.js';
import { queueStates, withTimeout } from '../prometheus/queues.js';
import type { AppDeps } from '../types.js';

const TIMEOUT_MS = 2000;

interface DependencyCheck {
  status: 'ok' | 'unavailable';
  latency_ms: number;
  error?: string;
}

async function timed(work: () => Promise<unknown>): Promise<DependencyCheck> {
  const started = process.hrtime.bigint();
  const ms = () => Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100;
  try {
    await withTimeout(work(), TIMEOUT_MS);
    return { status: 'ok', latency_ms: ms() };
  } catch (err) {
    return { status: 'unavailable', latency_ms: ms(), error: (err as Error).message || String(err) };
  }
}

const name = (id: number, slug: string) => `${String(id).padStart(6, '0')}_${slug}`;

async function migrationsReport(deps: AppDeps) {
  const [files, applied] = await Promise.all([listMigrations(), withTimeout(appliedMigrations(deps.sql), TIMEOUT_MS)]);
  const done = new Set(applied.map((m) => m.id));
  const known = new Set(files.map((m) => m.id));
  const pending = files.filter((m) => !done.has(m.id)).map((m) => name(m.id, m.name));
  // Applied here but absent from sql/: this code is older than the database.
  const unknown = applied.filter((m) => !known.has(m.id)).map((m) => name(m.id, m.name));
  return {
    status: pending.length > 0 ? 'pending' : 'ok',
    applied: applied.length,
    files: files.length,
    latest: applied.length > 0 ? name(applied.at(-1)!.id, applied.at(-1)!.name) : null,
    pending,
    unknown,
  };
}

async function queuesReport(deps: AppDeps) {
  const states = await withTimeout(queueStates(deps.queues), TIMEOUT_MS);
  return states.map((s) => ({
    name: s.queue,
    // null: Redis does not list its clients (CLIENT LIST refused), so the workers cannot be seen.
    workers: s.workers,
    status: s.workers === null ? 'unknown' : s.workers > 0 ? 'ok' : 'no_workers',
    counts: s.counts,
    oldest_waiting_seconds: Math.round(s.oldestWaitingSeconds * 1000) / 1000,
  }));
}

export async function healthReport(deps: AppDeps): Promise<{ httpStatus: number; body: Record<string, unknown> }> {
  const [postgres, redis] = await Promise.all([timed(() => ping(deps.sql)), timed(() => deps.redis.ping())]);
  const failed = (err: unknown) => ({ status: 'unknown', error: (err as Error).message || String(err) });
  const [migrations, queues] = await Promise.all([
    postgres.status === 'ok'
      ? migrationsReport(deps).catch(failed)
      : { status: 'unknown', error: 'Postgres is unavailable' },
    redis.status === 'ok' ? queuesReport(deps).catch(failed) : { status: 'unknown', error: 'Redis is unavailable' },
  ]);
  const down = postgres.status !== 'ok' || redis.status !== 'ok';
  const degraded =
    migrations.status !== 'ok' || !Array.isArray(queues) || queues.some((q) => q.status === 'no_workers');
  const status = down ? 'unavailable' : degraded ? 'degraded' : 'ok';
  return {
    httpStatus: down ? 503 : 200,
    body: { status, checks: { postgres, redis }, migrations, queues },
  };
}
