// The like-for-like floor of bench/send: a Koa route that does the least any durable send API
// must do per request, on PORT: read and parse the JSON body, insert one row into Postgres (table
// floor_emails of DATABASE_URL, created by the benchmark) and add one BullMQ job (queue "floor",
// prefix BENCH_BULL_PREFIX). No auth, no validation, no rate limit, no idempotency: what POST
// /emails adds on top of this is what the ratio measures.
import { Queue } from 'bullmq';
import Koa from 'koa';
import { createPool } from '../../shared/db/pool.js';
import { newId } from '../../shared/ids.js';
import { closeRedis, createRedis } from '../../shared/redis.js';
import { jsonParam } from '../../shared/db/params.js';

const sql = createPool(process.env.DATABASE_URL!, { max: 10, application: 'bench-send-floor' });
const connection = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'bullmq', 'bench-send-floor');
const queue = new Queue('floor', { connection, prefix: process.env.BENCH_BULL_PREFIX ?? 'benchfloor' });

const app = new Koa();
app.use(async (ctx) => {
  if (ctx.path !== '/floor' || ctx.method !== 'POST') return;
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
  const id = newId('em');
  await sql`insert into floor_emails (id, body) values (${id}, ${jsonParam(sql, body)})`;
  await queue.add('email', { emailId: id }, { jobId: id, removeOnComplete: { count: 1000 } });
  ctx.body = { id };
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () =>
  server.close(() => {
    void queue
      .close()
      .then(() => closeRedis(connection))
      .then(() => sql.end({ timeout: 5 }))
      .then(() => process.exit(0));
  }),
);
