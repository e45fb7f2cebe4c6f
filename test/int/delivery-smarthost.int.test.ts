import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { enqueueEmail, giveDkimKey, seedEmail } from '../helpers/mail-seed.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('delivery worker (smarthost)', () => {
  let api: TestApi;
  let org: SeededOrg;
  let sink: Sink;
  let smarthost: string;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await api.deps
      .sql`update domains set verified_at = now() - interval '60 days' where id = ${org.domains['acme.test']!.id}`;
    await giveDkimKey(api.deps.sql, org.domains['acme.test']!.id);
    sink = await startSink(() => null, {
      disabledCommands: [],
      authMethods: ['PLAIN', 'LOGIN'],
      onAuth(auth, _session, cb) {
        if (auth.username === 'relay' && auth.password === 's3cret') return cb(null, { user: 'relay' });
        cb(new Error('Invalid username or password'));
      },
    });
    smarthost = `smtp://relay:s3cret@127.0.0.1:${sink.port}?tls_verify=false`;
  });
  after(async () => {
    await sink.close();
    await api.close();
  });

  const seed = (to: string) =>
    seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId: org.domains['acme.test']!.id,
      domainName: 'acme.test',
      to: [to],
    });
  const count = async (emailId: string, type: string) =>
    (
      await api.deps.sql<
        { n: number }[]
      >`select count(*)::int as n from events where email_id = ${emailId} and type = ${type}`
    )[0]!.n;

  it('relays through the smarthost with AUTH over STARTTLS', async () => {
    const deps: WorkerDeps = workerDepsFor(api, { SMTP_SMARTHOST: smarthost });
    // A short stalled-check interval: BullMQ's check is shared by the queue's workers, and the
    // kill test below relies on it running often.
    const worker: DeliveryWorkers = await startDeliveryWorker(deps, {
      sweepEverySeconds: 0,
      worker: { stalledInterval: 500 },
    });
    try {
      const e = await seed('carol@gmail.com');
      await enqueueEmail(api.deps.queues, e.id);
      await waitFor('delivered', async () => (await count(e.id, 'email.delivered')) === 1);
      const msg = sink.received.find((m) => m.rcptTo.includes('carol@gmail.com'))!;
      expect(msg.user).to.equal('relay');
      expect(msg.secure).to.equal(true);
      const [ev] = await api.deps
        .sql`select provider from events where email_id = ${e.id} and type = 'email.delivered'`;
      expect(ev!.provider).to.equal('gmail');
    } finally {
      await worker.close();
      await deps.close();
    }
  });

  it('a worker killed mid-delivery: the next one delivers exactly once, and never again after the 250', async () => {
    const env = {
      ...process.env,
      DATABASE_URL: api.db.url,
      REDIS_URL: api.config.redisUrl,
      REDIS_PREFIX: api.config.redisPrefix,
      SECRET_KEY: api.config.secretKey,
      SMTP_SMARTHOST: smarthost,
      LOG_LEVEL: 'silent',
    };
    const children: ChildProcess[] = [];
    const untrack = track('delivery worker children', async () => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    });
    const startChild = async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/delivery-worker.ts'], {
        env,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
        child.once('exit', (code) => reject(new Error(`worker exited early (${code})`)));
      });
      return child;
    };
    try {
      sink.stall = new Promise<void>(() => {}); // DATA is never answered while the first worker lives
      const first = await startChild();
      const e = await seed('dave@dest.test');
      const ended = sink.dataEnded;
      await enqueueEmail(api.deps.queues, e.id);
      await waitFor('the message to reach DATA', async () => sink.dataEnded > ended);
      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      const [mid] = await api.deps
        .sql`select attempts, attempt_started_at from email_recipients where email_id = ${e.id}`;
      expect(mid!.attempts).to.equal(1);
      expect(mid!.attempt_started_at).to.be.instanceOf(Date);
      sink.stall = null;
      await startChild();
      await waitFor('delivery by the second worker', async () => (await count(e.id, 'email.delivered')) === 1);
      expect(sink.received.filter((m) => m.rcptTo.includes('dave@dest.test'))).to.have.length(1);
      // A stray re-run of the message after the recorded 250 sends nothing.
      const attempts = sink.attempts.get('dave@dest.test');
      await api.deps.queues.delivery.add('email', { emailId: e.id }, { jobId: `${e.id}-again` });
      await waitFor('rerun', async () => (await api.deps.queues.delivery.getJobState(`${e.id}-again`)) === 'completed');
      expect(sink.attempts.get('dave@dest.test')).to.equal(attempts);
      expect(await count(e.id, 'email.delivered')).to.equal(1);
      expect(await count(e.id, 'email.sent')).to.equal(1);
    } finally {
      sink.stall = null;
      await untrack();
    }
  });
});
