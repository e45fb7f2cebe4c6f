import { expect } from 'chai';
import { rollupEvents, rollupPending } from '../../shared/metrics/rollup.js';
import { recordEvents, publishEvents, type NewEvent } from '../../shared/events.js';
import { startMetricsWorker } from '../../workers/metrics.js';
import { insertEmailRows } from '../helpers/mail-rows.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('metrics rollup', () => {
  let api: TestApi;
  let org: SeededOrg;
  let keyId: string;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    keyId = org.key.id;
  });
  after(async () => api.close());

  async function sendRows(mode: 'live' | 'test' = 'live') {
    const d = org.domains['acme.test']!;
    return await insertEmailRows(api.deps.sql, {
      orgId: org.organization.id,
      domainId: d.id,
      domainName: d.name,
      keyId,
      mode,
      to: ['a@gmail.com'],
      kind: 'receipt',
    });
  }

  function ev(
    email: Awaited<ReturnType<typeof sendRows>>,
    type: NewEvent['type'],
    extra: Partial<NewEvent> = {},
    mode: 'live' | 'test' = 'live',
  ): NewEvent {
    const r = email.recipients[0]!;
    return {
      orgId: org.organization.id,
      mode,
      type,
      emailId: email.emailId,
      recipientId: r.id,
      recipient: r.email,
      domainId: org.domains['acme.test']!.id,
      keyId,
      kind: 'receipt',
      provider: 'gmail',
      dedupeKey: `${r.id}:${type}:${Math.random()}`,
      ...extra,
    };
  }

  async function totals() {
    const res = await api.request('GET', '/metrics?days=1&facet=provider', { token: org.key.token });
    expect(res.status).to.equal(200);
    return res.json;
  }

  it('counts a batch processed twice once', async () => {
    const e = await sendRows();
    const rows = await recordEvents(api.deps.sql, [ev(e, 'email.sent'), ev(e, 'email.delivered')]);
    const ids = rows.map((r) => r.id);
    expect(await rollupEvents(api.deps.sql, ids)).to.equal(2);
    expect(await rollupEvents(api.deps.sql, ids)).to.equal(0);
    const m = await totals();
    expect(m.totals.sent).to.equal(1);
    expect(m.totals.delivered).to.equal(1);
    expect(m.by).to.deep.equal([
      {
        key: 'gmail',
        label: m.by[0].label,
        sent: 1,
        delivered: 1,
        bouncedHard: 0,
        bouncedSoft: 0,
        complained: 0,
        opened: 0,
        clicked: 0,
        unsubscribed: 0,
        openedMachine: 0,
        clickedMachine: 0,
        delayed: 0,
        blocked: 0,
      },
    ]);
  });

  it('counts opens and clicks once per recipient, every other event each time', async () => {
    const before = (await totals()).totals;
    const e = await sendRows();
    const rows = await recordEvents(api.deps.sql, [
      ev(e, 'email.opened'),
      ev(e, 'email.opened'),
      ev(e, 'email.clicked', { url: 'https://x.test/1' }),
      ev(e, 'email.clicked', { url: 'https://x.test/2' }),
    ]);
    // Both opens in one batch count once too.
    const same = await sendRows();
    const pair = await recordEvents(api.deps.sql, [ev(same, 'email.opened'), ev(same, 'email.opened')]);
    await rollupEvents(
      api.deps.sql,
      pair.map((r) => r.id),
    );
    const mid = (await totals()).totals;
    expect(mid.opened - before.opened).to.equal(1);
    // Two batches, so the second open meets the first in another transaction.
    await rollupEvents(api.deps.sql, [rows[0]!.id, rows[2]!.id]);
    await rollupEvents(api.deps.sql, [rows[1]!.id, rows[3]!.id]);
    const after = (await totals()).totals;
    expect(after.opened - before.opened).to.equal(2);
    expect(after.clicked - before.clicked).to.equal(1);
  });

  it("counts machines' opens and clicks apart from people's, once per recipient each", async () => {
    const before = (await totals()).totals;
    const e = await sendRows();
    const mpp = { data: { machine: true, machine_reason: 'apple_mpp' } };
    const scan = { url: 'https://x.test/1', data: { machine: true, machine_reason: 'scanner' } };
    const rows = await recordEvents(api.deps.sql, [
      ev(e, 'email.opened', { ...mpp, dedupeKey: `${e.recipients[0]!.id}:opened:machine` }),
      ev(e, 'email.clicked', scan),
      ev(e, 'email.clicked', { ...scan, url: 'https://x.test/2' }),
      ev(e, 'email.opened', { data: { machine: false, machine_reason: null } }),
    ]);
    await rollupEvents(
      api.deps.sql,
      rows.map((r) => r.id),
    );
    const after = (await totals()).totals;
    expect(after.openedMachine - before.openedMachine).to.equal(1);
    expect(after.clickedMachine - before.clickedMachine).to.equal(1);
    expect(after.opened - before.opened).to.equal(1);
    expect(after.clicked - before.clicked).to.equal(0);
  });

  it('never counts test-mode events', async () => {
    const before = (await totals()).totals;
    const e = await sendRows('test');
    const rows = await recordEvents(api.deps.sql, [
      ev(e, 'email.sent', {}, 'test'),
      ev(e, 'email.bounced', { bounceType: 'hard' }, 'test'),
    ]);
    expect(
      await rollupEvents(
        api.deps.sql,
        rows.map((r) => r.id),
      ),
    ).to.equal(0);
    expect((await totals()).totals).to.deep.equal(before);
  });

  it('maps bounces, delays and blocks to their counters', async () => {
    const m0 = await totals();
    const e = await sendRows();
    const rows = await recordEvents(api.deps.sql, [
      ev(e, 'email.bounced', { bounceType: 'hard', detail: 'NoEmail' }),
      ev(e, 'email.bounced', { bounceType: 'soft', detail: 'MailboxFull' }),
      ev(e, 'email.bounced', { bounceType: 'undetermined', detail: 'Undetermined' }),
      ev(e, 'email.delivery_delayed', { detail: 'IPFailure', blocked: true }),
      ev(e, 'email.complained'),
      ev(e, 'email.unsubscribed'),
      ev(e, 'email.rejected', { detail: 'Suppressed' }),
    ]);
    await rollupEvents(
      api.deps.sql,
      rows.map((r) => r.id),
    );
    const m1 = await totals();
    const d = (k: string) => m1.totals[k] - m0.totals[k];
    expect([d('bouncedHard'), d('bouncedSoft'), d('complained'), d('unsubscribed')]).to.deep.equal([1, 2, 1, 1]);
    const gmail0 = m0.by.find((r: { key: string }) => r.key === 'gmail');
    const gmail1 = m1.by.find((r: { key: string }) => r.key === 'gmail');
    expect(gmail1.delayed - gmail0.delayed).to.equal(1);
    expect(gmail1.blocked - gmail0.blocked).to.equal(1);
  });

  it('the worker counts published events from the queue, exactly once', async () => {
    const deps = workerDepsFor(api);
    const worker = startMetricsWorker(deps);
    try {
      const before = (await totals()).totals;
      const e = await sendRows();
      const rows = await recordEvents(api.deps.sql, [
        ev(e, 'email.sent'),
        ev(e, 'email.delivered'),
        ev(e, 'email.opened'),
      ]);
      await publishEvents(
        api.deps.sql,
        api.deps.queues,
        rows.map((r) => r.id),
      );
      // Published twice: job ids are event ids, and the rollup dedupes anyway.
      await publishEvents(
        api.deps.sql,
        api.deps.queues,
        rows.map((r) => r.id),
      );
      const after = await waitFor('the rollup to count the open', async () => {
        const t = (await totals()).totals;
        return t.opened > before.opened && t;
      });
      expect(after.sent - before.sent).to.equal(1);
      expect(after.delivered - before.delivered).to.equal(1);
      expect(after.opened - before.opened).to.equal(1);
      const [row] = await api.deps
        .sql`select count(*)::int as n from events where id = any(${rows.map((r) => r.id)}) and metrics_counted_at is not null`;
      expect(row!.n).to.equal(3);
    } finally {
      await worker.close();
      await deps.close();
    }
  });

  it('concurrent drains share the pending events and count each once', async () => {
    const before = (await totals()).totals;
    const rows = [];
    for (let i = 0; i < 30; i++) {
      const e = await sendRows();
      rows.push(ev(e, 'email.sent'), ev(e, 'email.delivered'));
    }
    await recordEvents(api.deps.sql, rows);
    // Four drains at once with small batches: SKIP LOCKED hands each a disjoint slice.
    const results = await Promise.all(
      [1, 2, 3, 4].map(async () => {
        let n = 0;
        for (;;) {
          const r = await rollupPending(api.deps.sql, 7);
          n += r.counted;
          if (r.claimed === 0) return n;
        }
      }),
    );
    expect(results.reduce((a, b) => a + b, 0)).to.equal(60);
    const after = (await totals()).totals;
    expect(after.sent - before.sent).to.equal(30);
    expect(after.delivered - before.delivered).to.equal(30);
  });

  it('the timed drain counts events whose wake-up job never came', async () => {
    const deps = workerDepsFor(api);
    const worker = startMetricsWorker(deps, { sweepEveryMs: 100 });
    try {
      const before = (await totals()).totals;
      const e = await sendRows();
      // Recorded but never published: no job on the metrics queue.
      await recordEvents(api.deps.sql, [ev(e, 'email.sent')]);
      const after = await waitFor('the timed drain to count the event', async () => {
        const t = (await totals()).totals;
        return t.sent !== before.sent && t;
      });
      expect(after.sent - before.sent).to.equal(1);
    } finally {
      await worker.close();
      await deps.close();
    }
  });
});
