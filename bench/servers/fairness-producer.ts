// Organization A's broadcast for bench/fairness, in a process of its own: on each `store <tag>`
// line read from stdin it stores BENCH_FAIRNESS_BACKLOG messages and queues their jobs the way the
// broadcast worker does it (1,000 messages a statement, their jobs added to the broadcast stream's
// queue with shared/delivery-queue.ts), then prints `stored <tag> <ms>`. Env: DATABASE_URL,
// REDIS_URL, REDIS_PREFIX, A_ORG, A_DOMAIN, A_FROM, A_EMAIL.
import { createInterface } from 'node:readline';
import { createPool } from '../../shared/db/pool.js';
import { newId } from '../../shared/ids.js';
import { createQueues } from '../../shared/queues.js';
import { closeRedis, createRedis } from '../../shared/redis.js';
import { redisKeys } from '../../shared/redis-keys.js';

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`fairness-producer: ${name} is required`);
  return v;
};
const backlog = Number(process.env.BENCH_FAIRNESS_BACKLOG ?? 20_000);
const a = { orgId: env('A_ORG'), domainId: env('A_DOMAIN'), from: env('A_FROM'), email: env('A_EMAIL') };
const sql = createPool(env('DATABASE_URL'), { max: 2, application: 'tern-bench' });
const bull = createRedis(env('REDIS_URL'), 'bullmq', 'bench');
const queues = createQueues(bull, redisKeys(env('REDIS_PREFIX')).bullPrefix);

async function store(tag: string): Promise<void> {
  for (let k = 0; k < backlog; k += 1000) {
    const n = Math.min(1000, backlog - k);
    const ids = Array.from({ length: n }, () => newId('em'));
    const rcpts = ids.map((_, i) => `a-${tag}-${k + i}@dest.test`);
    await sql`
      insert into emails (id, org_id, domain_id, mode, source, stream, from_address, from_email, to_addresses,
                          subject, html, text, message_id, status)
      select id, ${a.orgId}, ${a.domainId}, 'live', 'broadcast', 'broadcast', ${a.from}, ${a.email}, array[r],
             'Our news', '<p>News of the month</p>', 'News of the month', id || '@bulk.test', 'queued'
      from unnest(${ids}::text[], ${rcpts}::text[]) as t(id, r)`;
    await sql`
      insert into email_recipients (id, email_id, org_id, field, address, email, domain)
      select ${'rcp_'} || substr(id, 4), id, ${a.orgId}, 'to', r, r, 'dest.test'
      from unnest(${ids}::text[], ${rcpts}::text[]) as t(id, r)`;
    await queues['delivery-broadcast'].enqueue(
      ids.map((emailId) => ({ emailId, orgId: a.orgId, stream: 'broadcast' as const, jobId: emailId })),
    );
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const [cmd, tag] = line.split(' ');
  if (cmd !== 'store' || !tag) return;
  const t0 = performance.now();
  store(tag).then(
    () => process.stdout.write(`stored ${tag} ${Math.round(performance.now() - t0)}\n`),
    (err: unknown) => {
      process.stderr.write(`fairness-producer: ${String(err)}\n`);
      process.exit(1);
    },
  );
});
process.on('SIGTERM', () => {
  void queues
    .close()
    .then(() => closeRedis(bull))
    .then(() => sql.end({ timeout: 5 }))
    .then(() => process.exit(0));
});
process.stdout.write('ready\n');
