// Scale-out on the engines operators already run (issue 15 item 4): two web and two worker
// processes (real child processes from the entry files) against
//   - a local three-master Redis Cluster (`REDIS_URL=redis+cluster://…`), and
//   - a local PgBouncer in transaction mode (`DATABASE_POOLER=transaction`), `release` included,
// each run send → delivery (real SMTP sink) → webhook → metrics, and deliver every message
// exactly once, counted at the sink by Message-ID; a key revoked through one web process is
// refused by the other (the key cache's pub/sub).
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { parseScale, postgresChecks } from '../../api/cli/doctor/postgres.js';
import { redisChecks } from '../../api/cli/doctor/redis.js';
import { createOrganization } from '../../shared/bootstrap.js';
import { loadToolConfig } from '../../shared/config.js';
import { createPool } from '../../shared/db/pool.js';
import { mintKey } from '../../shared/keys.js';
import { provisionDomain } from '../../shared/domains/setup.js';
import { closeRedis, createRedis, waitReady } from '../../shared/redis.js';
import { ADMIN_URL, dbUrl } from '../helpers/db.js';
import { startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { freePort } from '../helpers/ports.js';
import { launch, type Proc } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { startRedisCluster, type RedisCluster } from '../helpers/redis-cluster.js';
import { clearPrefix, TEST_REDIS_URL, testPrefix } from '../helpers/redis-prefix.js';
import { request, TEST_SECRET_KEY } from '../helpers/stack.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { waitFor } from '../helpers/wait.js';

const MESSAGES = 40;

interface Setup {
  name: string;
  cluster: boolean;
  bouncer: boolean;
}

const SETUPS: Setup[] = [
  { name: 'a three-master Redis Cluster', cluster: true, bouncer: false },
  { name: 'PgBouncer in transaction mode', cluster: false, bouncer: true },
];

/** Runs a tsx entry to its end (the `release` step); returns its exit code and output. */
async function runToEnd(entry: string, args: string[], env: Record<string, string>): Promise<[number | null, string]> {
  const p = launch(entry, env, args);
  const timer = setTimeout(() => void p.kill(), 120_000);
  const code = await p.exited;
  clearTimeout(timer);
  await p.kill();
  return [code, p.output()];
}

for (const setup of SETUPS) {
  describe(`scale-out: two web and two worker processes on ${setup.name}`, function () {
    this.timeout(300_000);
    const dbName = `tern_scale_${randomBytes(5).toString('hex')}`;
    let admin: postgres.Sql;
    let sql: postgres.Sql;
    let sink: Sink;
    let receiver: Receiver;
    let cluster: RedisCluster | null = null;
    let bouncer: PgBouncer | null = null;
    let prefix: string;
    const procs: Proc[] = [];
    let env: Record<string, string>;

    before(async function () {
      this.timeout(300_000);
      admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
      await admin.unsafe(`create database "${dbName}"`);
      sink = await startSink();
      receiver = await startReceiver();
      if (setup.cluster) cluster = await startRedisCluster();
      if (setup.bouncer) bouncer = await startPgBouncer();
      prefix = testPrefix();
      env = {
        DATABASE_URL: bouncer ? bouncer.urlFor(dbName) : dbUrl(dbName),
        ...(bouncer ? { DATABASE_POOLER: 'transaction' } : {}),
        DATABASE_POOL_MAX: '4',
        REDIS_URL: cluster ? cluster.url : TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        SMTP_SMARTHOST: `smtp://127.0.0.1:${sink.port}/?tls_verify=false`,
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_RETRY_SECONDS: '1,1,1',
        DELIVERY_RETRY_SECONDS: '1,1,1',
        MX_HOST: 'mx.shop.test',
        LOG_LEVEL: 'warn',
      };
      // The migrations run through the same URL as the processes (PgBouncer included).
      const [code, out] = await runToEnd('api/cli/tern.ts', ['migrate'], env);
      expect(code, out).to.equal(0);
      sql = postgres(dbUrl(dbName), { max: 2, onnotice: () => {} });
    });

    after(async () => {
      for (const p of procs) await p.kill();
      await sql?.end();
      await bouncer?.close();
      await cluster?.close();
      if (!cluster && prefix) await clearPrefix(prefix);
      await receiver?.close();
      await sink?.close();
      await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
      await admin.end();
    });

    if (setup.cluster) {
      it('tern doctor checks every master of the cluster', async () => {
        const redis = createRedis(cluster!.url, 'api', 'doctor-test');
        try {
          expect(await waitReady(redis, 10_000)).to.equal(true);
          const checks = await redisChecks(redis);
          const names = cluster!.ports.map((p) => `Redis maxmemory-policy (127.0.0.1:${p})`).sort();
          expect(
            checks
              .filter((c) => c.name.startsWith('Redis maxmemory'))
              .map((c) => c.name)
              .sort(),
          ).to.deep.equal(names);
          expect(checks.filter((c) => c.name.startsWith('Redis maxmemory')).every((c) => c.status === 'ok')).to.equal(
            true,
          );
          // The test's nodes keep no data on disk: each one is named failing.
          expect(checks.filter((c) => c.name.startsWith('Redis persistence') && c.status === 'fail')).to.have.length(3);
        } finally {
          await closeRedis(redis);
        }
      });
    }

    if (setup.bouncer) {
      it('tern doctor asks for the database statement timeout behind a transaction pooler', async () => {
        const config = loadToolConfig({ DATABASE_URL: bouncer!.urlFor(dbName), DATABASE_POOLER: 'transaction' });
        const check = async () => {
          const pool = createPool(config.databaseUrl, { max: 1, pooler: config.databasePooler });
          try {
            const checks = await postgresChecks(pool, config, parseScale('web=50'));
            expect(checks.find((c) => c.name === 'Postgres max_connections')?.status).to.equal('ok');
            return checks.find((c) => c.name === 'Postgres statement_timeout')!;
          } finally {
            await pool.end();
          }
        };
        expect((await check()).status).to.equal('warn');
        await admin.unsafe(`alter database "${dbName}" set statement_timeout = '15s'`);
        // New server connections read it: PgBouncer's idle ones predate it, so they are ended (the
        // first statement on one then fails, "server conn crashed?", and PgBouncer opens another).
        await admin.unsafe(
          `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${dbName}' and pid <> pg_backend_pid()`,
        );
        await waitFor('the statement_timeout check ok', async () => (await check().catch(() => null))?.status === 'ok');
        await admin.unsafe(`alter database "${dbName}" reset statement_timeout`);
      });
    }

    it('delivers every message sent through either web process exactly once, with its webhooks and metrics', async () => {
      const org = await createOrganization(sql, 'tern', { name: 'Shop', adminEmail: 'ops@shop.test' });
      const orgId = org.organization.id;
      await sql`update organizations set rate_limit_per_second = 10000, rate_limit_burst = 10000 where id = ${orgId}`;
      const domain = await provisionDomain(
        sql,
        { mxHost: 'mx.shop.test', secretKey: TEST_SECRET_KEY },
        { orgId, name: 'shop.test', verified: true },
      );
      // Past the warm-up ramp: the test is about processes, not daily caps.
      await sql`update domains set verified_at = now() - interval '60 days' where id = ${domain.id}`;
      const { token } = await mintKey(sql, 'tern', {
        orgId,
        name: 'send',
        mode: 'live',
        permission: 'SEND',
        domainIds: [],
        createdBy: null,
      });

      const ports = [await freePort(), await freePort()];
      for (const port of ports) {
        procs.push(launch('api/http.ts', { ...env, PORT: String(port), BASE_URL: `http://127.0.0.1:${port}` }));
      }
      for (let i = 0; i < 2; i++) procs.push(launch('workers/main.ts', env));
      const webs = ports.map((p) => `http://127.0.0.1:${p}`);
      const output = () => procs.map((p, i) => `--- process ${i}:\n${p.output().slice(-3000)}`).join('\n');
      const ready = async (web: string) =>
        fetch(`${web}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.ok,
          () => false,
        );
      await waitFor('both web processes ready', async () => (await Promise.all(webs.map(ready))).every(Boolean), {
        timeoutMs: 120_000,
      }).catch((err: Error) => {
        throw new Error(`${err.message}\n${output()}`);
      });

      const hook = await request(webs[0]!, 'POST', '/webhooks', {
        token: org.key.token,
        body: { url: `${receiver.url}/hooks`, events: ['email.delivered'] },
      });
      expect(hook.status, hook.text).to.equal(201);

      const ids: string[] = [];
      const sends = Array.from({ length: MESSAGES }, async (_, i) => {
        const r = await request(webs[i % 2]!, 'POST', '/emails', {
          token,
          body: { from: 'Shop <orders@shop.test>', to: [`buyer${i}@dest.test`], subject: `Order ${i}`, text: 'Thanks' },
        });
        expect(r.status, r.text).to.equal(200);
        ids.push(r.json.id as string);
      });
      await Promise.all(sends);

      // Exactly once: every message at the sink, none twice, after the workers had time to repeat one.
      await waitFor('every message at the sink', () => sink.received.length >= MESSAGES, 120_000).catch(
        (err: Error) => {
          throw new Error(`${err.message}\n${output()}`);
        },
      );
      const delivered = await waitFor(
        'every email delivered in GET /emails/{id}',
        async () => {
          const states = await Promise.all(
            ids.map(async (id, i) => {
              const r = await request(webs[(i + 1) % 2]!, 'GET', `/emails/${id}`, { token: org.key.token });
              return r.json?.recipients?.[0]?.status as string | undefined;
            }),
          );
          return states.every((s) => s === 'delivered') && states;
        },
        60_000,
      );
      expect(delivered).to.have.length(MESSAGES);
      const messageIds = sink.received.map((m) => /^message-id:\s*(\S+)/im.exec(m.raw.toString())?.[1]);
      expect(messageIds.every(Boolean), 'each message carries a Message-ID').to.equal(true);
      expect(new Set(messageIds).size, 'distinct Message-IDs at the sink').to.equal(MESSAGES);
      expect(sink.received, 'messages at the sink').to.have.length(MESSAGES);
      expect(sink.received.map((m) => m.rcptTo[0]).sort()).to.deep.equal(
        Array.from({ length: MESSAGES }, (_, i) => `buyer${i}@dest.test`).sort(),
      );

      // Webhooks: an email.delivered for each message.
      await receiver.waitForRequests(MESSAGES, undefined, 60_000);
      const hooked = new Set(
        receiver.received.map((r) => (JSON.parse(r.raw.toString()) as { data: { email_id: string } }).data.email_id),
      );
      expect([...hooked].sort()).to.deep.equal([...ids].sort());

      // Metrics: the rollup worker counts each delivery once.
      const totals = await waitFor(
        'GET /metrics counting every delivery',
        async () => {
          const r = await request(webs[1]!, 'GET', '/metrics?days=1', { token: org.key.token });
          return r.json?.totals?.delivered === MESSAGES && (r.json.totals as Record<string, number>);
        },
        60_000,
      );
      expect(totals.sent).to.equal(MESSAGES);

      // Pub/sub across the processes: a key revoked through one web process is refused by the other.
      // The key cache holds a key 30 s; the refusal must come sooner, from the invalidation.
      const spare = await mintKey(sql, 'tern', {
        orgId,
        name: 'spare',
        mode: 'live',
        permission: 'SEND',
        domainIds: [],
        createdBy: null,
      });
      expect((await request(webs[1]!, 'GET', '/keys/me', { token: spare.token })).status).to.equal(200);
      const revoked = await request(webs[0]!, 'DELETE', `/keys/${spare.key.id}`, { token: org.key.token });
      expect(revoked.status, revoked.text).to.be.oneOf([200, 204]);
      await waitFor(
        'the other web process refusing the revoked key',
        async () => (await request(webs[1]!, 'GET', '/keys/me', { token: spare.token })).status === 401,
        15_000,
      );

      for (const [i, p] of procs.entries()) expect(p.alive(), `process ${i} still running\n${output()}`).to.equal(true);
      if (cluster) {
        // The queues really live on the cluster, not on the shared single Redis.
        let keys = 0;
        for (const port of cluster.ports) {
          const node = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
          try {
            keys += (await node.keys(`${prefix}:{bull}:delivery:*`)).length;
          } finally {
            node.disconnect();
          }
        }
        expect(keys, 'delivery queue keys on the cluster').to.be.greaterThan(0);
      }
    });
  });
}
