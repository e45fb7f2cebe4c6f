// Delivery under faults (issue 11 items 2, 4, 7, 9; issue 13 item 4): every email ends once no
// recipient can move, the worker's 'error' listener, the outbound pool's slot released and its
// wait bounded, a throttle whose Redis is away deferring instead of failing, the sweep that
// goes on until nothing is due and runs at once when Redis lost its data, and attempt leases of
// seconds (a dead holder's attempt taken over at once, a live holder's never).
import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '../../shared/ids.js';
import { createLogger } from '../../shared/logger.js';
import { Outbound, type AttemptResult, type OutboundMessage } from '../../shared/mail/outbound/index.js';
import { createRedis } from '../../shared/redis.js';
import { redisKeys } from '../../shared/redis-keys.js';
import { ATTEMPT_LEASE_SECONDS, startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import { startSweeper } from '../../workers/delivery/schedule.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { enqueueEmail, giveDkimKey, seedEmail } from '../helpers/mail-seed.js';
import { freePort } from '../helpers/ports.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

/** Resolves with `p`, or rejects after `ms` (a hang becomes a clear failure). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: still waiting after ${ms} ms`)), ms)),
  ]);
}

describe('delivery under faults', function () {
  this.timeout(60_000);
  let api: TestApi;
  let org: SeededOrg;
  let sink: Sink;
  const domainName = 'acme.test';
  const domainId = () => org.domains[domainName]!.id;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: domainName }] });
    await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${domainId()}`;
    await giveDkimKey(api.deps.sql, domainId());
    sink = await startSink();
  });
  after(async () => {
    await sink.close();
    await api.close();
  });

  const smarthost = () => `smtp://127.0.0.1:${sink.port}?tls_verify=false`;
  const seed = (to: string[], extra: { createdAt?: Date } = {}) =>
    seedEmail(api.deps.sql, { orgId: org.organization.id, domainId: domainId(), domainName, to, ...extra });
  const emailStatus = async (id: string) =>
    (await api.deps.sql<{ status: string }[]>`select status from emails where id = ${id}`)[0]!.status;
  const recipientsOf = (id: string) =>
    api.deps.sql<{ email: string; status: string; last_response: string | null }[]>`
      select email, status, last_response from email_recipients where email_id = ${id} order by email`;
  const delivered = (address: string) => sink.received.filter((m) => m.rcptTo.includes(address)).length;

  async function withWorker<T>(
    env: Record<string, string>,
    opts: Parameters<typeof startDeliveryWorker>[1],
    fn: (deps: WorkerDeps) => Promise<T>,
  ) {
    const deps = workerDepsFor(api, { SMTP_SMARTHOST: smarthost(), ...env });
    let worker: DeliveryWorkers | null = null;
    try {
      worker = await startDeliveryWorker(deps, opts);
      return await fn(deps);
    } finally {
      await worker?.close();
      await deps.close();
    }
  }

  describe('terminal status (issue 11.2, 13.4)', () => {
    it('ends an email whose every recipient is suppressed as failed, with the reason on each recipient', async () => {
      for (const [email, reason] of [
        ['gone@dest.test', 'hard_bounce'],
        ['angry@dest.test', 'complaint'],
      ] as const) {
        await api.deps.sql`insert into suppressions (id, org_id, email, domain_id, reason)
                           values (${newId('sup')}, ${org.organization.id}, ${email}, null, ${reason})`;
      }
      const e = await seed(['gone@dest.test', 'angry@dest.test']);
      await withWorker({}, { sweepEverySeconds: 0 }, async () => {
        await enqueueEmail(api.deps.queues, e.id);
        await waitFor('the email to end as failed', async () => (await emailStatus(e.id)) === 'failed');
      });
      expect(await recipientsOf(e.id)).to.deep.equal([
        { email: 'angry@dest.test', status: 'rejected', last_response: 'suppressed (complaint)' },
        { email: 'gone@dest.test', status: 'rejected', last_response: 'suppressed (hard_bounce)' },
      ]);
      expect(delivered('gone@dest.test') + delivered('angry@dest.test')).to.equal(0);
    });

    it('the sweeper settles emails already left queued/processing with every recipient ended', async () => {
      const rejected = await seed(['left1@dest.test']);
      const mixed = await seed(['left2@dest.test', 'left3@dest.test']);
      await api.deps.sql`update email_recipients set status = 'rejected', last_response = 'suppressed'
                         where email_id = ${rejected.id}`;
      await api.deps.sql`update email_recipients set status = 'delivered', attempts = 1
                         where email_id = ${mixed.id} and email = 'left2@dest.test'`;
      await api.deps
        .sql`update email_recipients set status = 'rejected' where email_id = ${mixed.id} and email = 'left3@dest.test'`;
      await api.deps.sql`update emails set status = 'processing' where id = ${mixed.id}`;
      await api.deps
        .sql`update emails set updated_at = now() - interval '1 hour' where id in ${api.deps.sql([rejected.id, mixed.id])}`;
      const deps = workerDepsFor(api);
      try {
        await startSweeper.sweep(deps, 60);
      } finally {
        await deps.close();
      }
      expect(await emailStatus(rejected.id)).to.equal('failed');
      expect(await emailStatus(mixed.id)).to.equal('sent');
    });
  });

  it('logs DELIVERY_WORKER_ERROR for an error BullMQ reports, and keeps the worker (issue 11.4)', async () => {
    const lines: string[] = [];
    const deps = workerDepsFor(api, { SMTP_SMARTHOST: smarthost() });
    const logged: WorkerDeps = {
      ...deps,
      logger: createLogger('info', 'test', { write: (l: string) => void lines.push(l) }),
    };
    const worker = await startDeliveryWorker(logged, { sweepEverySeconds: 0 });
    try {
      for (const w of [worker.transactional, worker.broadcast]) {
        expect(() => w.emit('error', new Error('could not renew lock'))).not.to.throw();
      }
      expect(lines.some((l) => l.includes('"event":"DELIVERY_WORKER_ERROR"'))).to.equal(true);
      const e = await seed(['after-error@dest.test']);
      await enqueueEmail(api.deps.queues, e.id);
      await waitFor('a delivery after the error', async () => delivered('after-error@dest.test') === 1);
    } finally {
      await worker.close();
      await deps.close();
    }
  });

  describe('outbound pool (issue 11.7)', () => {
    const config = (perHost: number) => ({
      smtpSmarthost: `smtp://127.0.0.1:${sink.port}?tls_verify=false`,
      dnsServers: [],
      outboundPort: 25,
      heloName: 'mta.tern.test',
      outboundConnectionsPerHost: perHost,
    });
    const message = (to: string): OutboundMessage => ({
      id: newId('rcp'),
      from: 'b@bounces.acme.test',
      to,
      raw: Buffer.from(`Message-ID: <${newId('em')}@acme.test>\r\nSubject: x\r\n\r\nhi\r\n`),
    });

    it('gives the slot back when a before() hook throws, so the next delivery gets a connection', async () => {
      const outbound = new Outbound(config(1));
      try {
        const route = await outbound.route('dest.test');
        const failing = outbound.deliver(route, [message('hook@dest.test')], {
          before: () => Promise.reject(new Error('Connection is closed.')),
          after: async () => {},
        });
        const err = await failing.then(
          () => null,
          (e: unknown) => e as Error,
        );
        expect(err?.message).to.equal('Connection is closed.');
        const results: AttemptResult[] = [];
        await within(
          outbound.deliver(route, [message('next@dest.test')], { after: async (_m, r) => void results.push(r) }),
          10_000,
          'the next delivery',
        );
        expect(results.map((r) => r.kind)).to.deep.equal(['delivered']);
      } finally {
        outbound.close();
      }
    });

    it('bounds the wait for a connection: a message that finds none in time is deferred', async () => {
      const outbound = new Outbound(config(1), { acquireTimeoutMs: 300 });
      let release!: () => void;
      sink.stall = new Promise<void>((r) => (release = r));
      try {
        const route = await outbound.route('dest.test');
        const held = outbound.deliver(route, [message('slow@dest.test')], { after: async () => {} });
        await waitFor('the first message to hold the slot', async () => sink.dataEnded > 0 || sink.stall === null);
        const results: AttemptResult[] = [];
        await within(
          outbound.deliver(route, [message('waits@dest.test')], { after: async (_m, r) => void results.push(r) }),
          10_000,
          'the waiting delivery',
        );
        expect(results).to.have.length(1);
        expect(results[0]!.kind).to.equal('deferred');
        expect(results[0]!.response).to.match(/no free connection to 127\.0\.0\.1:\d+ within 300 ms/);
        release();
        sink.stall = null;
        await held;
      } finally {
        release();
        sink.stall = null;
        outbound.close();
      }
    });
  });

  it('defers (not fails) recipients while the throttle’s Redis is away, and the worker keeps moving (issue 11.7)', async () => {
    const deadPort = await freePort();
    const deps = workerDepsFor(api, { SMTP_SMARTHOST: smarthost(), OUTBOUND_CONNECTIONS_PER_HOST: '1' });
    // The plain-command client (the throttle's) points at nothing; BullMQ's connection works.
    const away = createRedis(`redis://127.0.0.1:${deadPort}`, 'api', 'test-away');
    const worker = await startDeliveryWorker({ ...deps, redis: away }, { sweepEverySeconds: 0 });
    try {
      const a = await seed(['paced1@dest.test']);
      const b = await seed(['paced2@dest.test']);
      await enqueueEmail(api.deps.queues, a.id);
      await enqueueEmail(api.deps.queues, b.id);
      for (const e of [a, b]) {
        const [r] = await waitFor(
          'a deferral',
          async () => {
            const rows = await recipientsOf(e.id);
            return rows[0]!.status === 'delivery_delayed' ? rows : null;
          },
          30_000,
        );
        expect(r!.last_response).to.match(/^provider pacing unavailable/);
      }
    } finally {
      await worker.close();
      away.disconnect();
      await deps.close();
    }
  });

  describe('sweep and leases (issue 11.9)', () => {
    it('re-enqueues every stuck message in one sweep, past a page of 500', async () => {
      const org2 = await seedOrg(api.deps.sql, { domains: [{ name: 'bulk.test' }] });
      const d = org2.domains['bulk.test']!;
      const n = 1201;
      await api.deps.sql`
        with e as (
          insert into emails (id, org_id, domain_id, mode, from_address, from_email, subject, text, message_id, status, created_at)
          select 'em_sweep' || lpad(g::text, 6, '0'), ${org2.organization.id}, ${d.id}, 'test', 'a@bulk.test', 'a@bulk.test',
                 's', 't', 'm' || g || '@bulk.test', 'queued', now() - interval '10 minutes'
          from generate_series(1, ${n}) g returning id)
        insert into email_recipients (id, email_id, org_id, field, address, email, domain)
        select 'rcp_' || e.id, e.id, ${org2.organization.id}, 'to', 'x@dest.test', 'x@dest.test', 'dest.test' from e`;
      const deps = workerDepsFor(api);
      try {
        expect(await startSweeper.sweep(deps, 60)).to.equal(n);
      } finally {
        await deps.close();
      }
      const ids = await api.deps.queues.delivery.getJobs(['waiting', 'prioritized', 'delayed'], 0, -1);
      expect(
        new Set(ids.filter((j) => j.data.emailId.startsWith('em_sweep')).map((j) => j.data.emailId)).size,
      ).to.equal(n);
      for (const j of ids.filter((x) => x.data.emailId.startsWith('em_sweep'))) await j.remove();
      await api.deps.sql`update emails set status = 'canceled' where id like 'em_sweep%'`;
    });

    it('sweeps at once when Redis lost its data (the sentinel key is gone)', async () => {
      await withWorker({}, { sweepEverySeconds: 3600 }, async (deps) => {
        await seed(['lost@dest.test'], { createdAt: new Date(Date.now() - 60_000) });
        // No job: as after a FLUSHALL. The sentinel goes with everything else.
        await deps.redis.del(deps.redisKeys.deliverySentinel);
        await waitFor('the lost message swept and delivered', async () => delivered('lost@dest.test') === 1);
      });
    });

    it('sweeps once more after the triggered grace: a message stored just before Redis lost its data is not left to the timed sweep', async () => {
      // Redis lost the job of a message stored a moment before (a FLUSHALL, a relay whose
      // enqueue failed during an outage): too young for the triggered sweep's 5 s grace.
      await api.deps.redis.set(redisKeys(api.config.redisPrefix).deliverySentinel, String(Date.now()));
      await withWorker({}, { sweepEverySeconds: 3600 }, async (deps) => {
        await seed(['young@dest.test']);
        await deps.redis.del(deps.redisKeys.deliverySentinel);
        await waitFor('the young message swept and delivered', async () => delivered('young@dest.test') === 1, 30_000);
      });
    });

    it('re-enqueues a message stored without its job (its web process killed before the enqueue) within half a minute by default', async () => {
      const deps = workerDepsFor(api);
      try {
        // Period + grace bound how long such a message waits: the fault suite's target is 60 s
        // from the repair, its processing included.
        expect(deps.config.deliverySweepSeconds + deps.config.deliverySweepGraceSeconds).to.be.at.most(30);
        const orphan = await seed(['orphan@dest.test'], { createdAt: new Date(Date.now() - 20_000) });
        expect(await startSweeper.sweep(deps, deps.config.deliverySweepGraceSeconds)).to.be.at.least(1);
        const jobs = await api.deps.queues.delivery.getJobs(['waiting', 'prioritized'], 0, -1);
        const mine = jobs.filter((j) => j.data.emailId === orphan.id);
        expect(mine).to.have.length(1);
        for (const j of mine) await j.remove();
        await api.deps.sql`update emails set status = 'canceled' where id = ${orphan.id}`;
      } finally {
        await deps.close();
      }
    });

    it('records an attempt its dead holder journaled as accepted without sending it again; sends one it did not', async () => {
      // A worker killed between the server's 250 and the commit of that result (npm run chaos:
      // 5 duplicates after a worker SIGKILL on a busy machine) leaves this state behind.
      const dir = await mkdtemp(join(tmpdir(), 'tern-journal-test-'));
      try {
        const accepted = await seed(['journaled@dest.test']);
        const unknown = await seed(['unjournaled@dest.test']);
        const ids = [accepted.id, unknown.id];
        await api.deps.sql`update emails set status = 'sent' where id in ${api.deps.sql(ids)}`;
        await api.deps.sql`update email_recipients set status = 'sent', attempts = 1,
                             attempt_started_at = now() - interval '20 seconds', attempt_job = 'dead0123beef:job:1',
                             attempt_expires_at = now() - interval '1 second'
                           where email_id in ${api.deps.sql(ids)}`;
        const rcpt = accepted.recipients['journaled@dest.test']!;
        const line = { r: rcpt, a: 1, response: '250 2.0.0 Ok: queued as JOURNALED' };
        await writeFile(join(dir, 'dead0123beef.0.jsonl'), `${JSON.stringify(line)}\n{"r":"cut sh`);
        const ownLines = async () => {
          const own = (await readdir(dir)).filter((f) => !f.startsWith('dead0123beef.'));
          return (await Promise.all(own.map((f) => readFile(join(dir, f), 'utf8')))).join('');
        };
        const rcpt2 = unknown.recipients['unjournaled@dest.test']!;
        await withWorker({ DELIVERY_JOURNAL_DIR: dir }, { sweepEverySeconds: 0 }, async () => {
          for (const id of ids) await enqueueEmail(api.deps.queues, id);
          await waitFor('the unjournaled attempt sent again', async () => delivered('unjournaled@dest.test') === 1);
          await waitFor(
            'the journaled attempt recorded',
            async () => (await recipientsOf(accepted.id))[0]!.status === 'delivered',
          );
          // The worker journaled the acceptance of its own send (attempt 2).
          expect(await ownLines()).to.contain(`"r":"${rcpt2}","a":2`);
        });
        expect(delivered('journaled@dest.test')).to.equal(0);
        expect((await recipientsOf(accepted.id))[0]!.last_response).to.equal(line.response);
        // Stopped cleanly: its journal is gone; the dead holder's stays (a day).
        expect(await ownLines()).to.equal('');
        expect(await readdir(dir)).to.deep.equal(['dead0123beef.0.jsonl']);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('takes over an attempt whose lease expired at once, and never one whose holder still renews it', async () => {
      const dead = await seed(['dead-holder@dest.test']);
      const alive = await seed(['live-holder@dest.test']);
      await api.deps.sql`update emails set status = 'sent' where id in ${api.deps.sql([dead.id, alive.id])}`;
      await api.deps.sql`update email_recipients set status = 'sent', attempts = 1,
                           attempt_started_at = now() - interval '20 seconds', attempt_job = 'gone:job:1',
                           attempt_expires_at = now() - interval '1 second'
                         where email_id = ${dead.id}`;
      await api.deps.sql`update email_recipients set status = 'sent', attempts = 1,
                           attempt_started_at = now() - interval '20 seconds', attempt_job = 'alive:job:1',
                           attempt_expires_at = now() + interval '1 hour'
                         where email_id = ${alive.id}`;
      await withWorker({}, { sweepEverySeconds: 0 }, async () => {
        await enqueueEmail(api.deps.queues, dead.id);
        await enqueueEmail(api.deps.queues, alive.id);
        await waitFor('the dead holder’s attempt taken over', async () => delivered('dead-holder@dest.test') === 1);
        await waitFor(
          'the live holder’s message looked at',
          async () => (await api.deps.queues.delivery.getJobState(alive.id)) === 'completed',
        );
      });
      expect(delivered('live-holder@dest.test')).to.equal(0);
      const [held] = await api.deps.sql<{ attempt_job: string; status: string }[]>`
        select attempt_job, status from email_recipients where email_id = ${alive.id}`;
      expect(held).to.deep.equal({ attempt_job: 'alive:job:1', status: 'sent' });
      // It is looked at again when the live holder's lease would expire.
      const jobs = await api.deps.queues.delivery.getJobs(['delayed'], 0, -1);
      expect(jobs.some((j) => j.data.emailId === alive.id)).to.equal(true);
    });

    it('a run stopped past its lease sends none of the attempts another job took over meanwhile', async () => {
      // The worker process "stopped" (SIGSTOP, a paused VM) while its server read the first
      // message: the event loop is blocked past the 15 s lease, during which another job takes
      // the other two attempts over. Woken, the run must not send them a second time.
      const email = await seed(['first@dest.test', 'second@dest.test', 'third@dest.test']);
      const others = [email.recipients['second@dest.test']!, email.recipients['third@dest.test']!];
      const takeOver = `update email_recipients set attempts = attempts + 1, attempt_job = 'other0123:job:1',
        attempt_started_at = now(), attempt_expires_at = now() + interval '1 hour'
        where id in ('${others.join("','")}')`;
      const frozen = await startSink((rcpt, count) => {
        if (rcpt === 'first@dest.test' && count === 1) {
          execFileSync('sleep', [String(ATTEMPT_LEASE_SECONDS + 2)]);
          execFileSync('psql', [api.db.url, '-qc', takeOver]);
        }
        return null;
      });
      try {
        await withWorker(
          { SMTP_SMARTHOST: `smtp://127.0.0.1:${frozen.port}?tls_verify=false`, OUTBOUND_CONNECTIONS_PER_HOST: '1' },
          { sweepEverySeconds: 0 },
          async () => {
            await enqueueEmail(api.deps.queues, email.id);
            await waitFor(
              'the first recipient recorded',
              async () => (await recipientsOf(email.id))[0]!.status === 'delivered',
              40_000,
            );
            await waitFor(
              'the run to end',
              async () => (await api.deps.queues.delivery.getJobState(email.id)) === 'completed',
            );
          },
        );
        expect(frozen.received.map((m) => m.rcptTo)).to.deep.equal([['first@dest.test']]);
        const held = await api.deps.sql<{ attempt_job: string | null }[]>`
          select attempt_job from email_recipients where id in ${api.deps.sql(others)}`;
        expect(held.map((h) => h.attempt_job)).to.deep.equal(['other0123:job:1', 'other0123:job:1']);
      } finally {
        await frozen.close();
      }
    });
  });
});
