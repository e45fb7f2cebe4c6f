// Secrets at rest (docs/operations.md "Secrets at rest") through the API, the workers and the
// `tern` CLI: webhook signing secrets and DKIM private keys are sealed in Postgres (no secret,
// no PEM in any row), deliveries are still signed with them, rows stored in plain text are read
// and then sealed by `tern migrate`, and `tern secrets rotate` seals every row under a new
// SECRET_KEY, opening the old ones with SECRET_KEY_PREVIOUS.
import type { Worker } from 'bullmq';
import { expect } from 'chai';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { verify } from '../../shared/webhooks/signing.js';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startWebhookDelivery } from '../../workers/webhook-delivery.js';
import { cliJson, tern } from '../helpers/cli.js';
import { giveDkimKey } from '../helpers/mail-seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { workerDepsFor } from '../helpers/workers.js';

const NEW_KEY = 'a-new-secret-key-for-rotation-0123456789abcdef';

describe('secrets at rest', function () {
  this.timeout(120_000);
  let s: WebhookStack;
  let deps: WorkerDeps;
  let delivery: DeliveryWorkers;

  before(async () => {
    s = await startWebhookStack({ workers: true });
    deps = workerDepsFor(s.api);
    delivery = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
  });
  after(async () => {
    await delivery?.close();
    await deps?.close();
    await s?.close();
  });

  const token = () => s.org.key.token;

  /** Every stored secret value, of every row. */
  async function stored(api: TestApi = s.api): Promise<string[]> {
    const rows = await api.deps.sql<{ v: string }[]>`
      select signing_secret as v from webhooks
      union all select previous_secret from webhooks where previous_secret is not null
      union all select dkim_private_key from domains where dkim_private_key is not null`;
    return rows.map((r) => r.v);
  }

  /** POST /webhooks/{id}/test and the signed request the receiver got for it. */
  async function testEvent(api: TestApi, webhookId: string) {
    const res = await api.request('POST', `/webhooks/${webhookId}/test`, { token: token(), body: {} });
    expect(res.status, res.text).to.equal(202);
    const [req] = await s.receiver.waitForRequests(1, (r) => r.headers['tern-delivery-id'] === res.json.id);
    return req!;
  }

  it('seals a webhook signing secret, and signs deliveries with it (both secrets during a rotation)', async () => {
    const wh = await s.createWebhook({ url: `${s.receiver.url}/hook`, events: ['email.sent'] });
    expect(wh.signing_secret).to.match(/^whsec_/);
    const [row] = await s.api.deps.sql<{ signing_secret: string }[]>`
      select signing_secret from webhooks where id = ${wh.id}`;
    expect(row!.signing_secret).to.match(/^v1:[0-9a-f]{8}:/);
    expect(row!.signing_secret).not.to.contain(wh.signing_secret.slice(6));
    const first = await testEvent(s.api, wh.id);
    expect(verify(first.raw, first.headers['tern-signature'], wh.signing_secret)).to.equal(true);

    const rotated = await s.api.request('POST', `/webhooks/${wh.id}/rotate-secret`, { token: token(), body: {} });
    expect(rotated.status, rotated.text).to.equal(200);
    const [after] = await s.api.deps.sql<{ signing_secret: string; previous_secret: string }[]>`
      select signing_secret, previous_secret from webhooks where id = ${wh.id}`;
    for (const v of [after!.signing_secret, after!.previous_secret]) expect(v).to.match(/^v1:/);
    const second = await testEvent(s.api, wh.id);
    for (const secret of [wh.signing_secret, rotated.json.signing_secret as string]) {
      expect(verify(second.raw, second.headers['tern-signature'], secret)).to.equal(true);
    }
  });

  it('seals a new domain’s DKIM private key, and signs its messages with it', async () => {
    const created = await s.api.request('POST', '/domains', { token: token(), body: { name: 'sealed.test' } });
    expect(created.status, created.text).to.equal(201);
    const [row] = await s.api.deps.sql<{ dkim_private_key: string; dkim_public_key: string }[]>`
      select dkim_private_key, dkim_public_key from domains where id = ${created.json.id}`;
    expect(row!.dkim_private_key).to.match(/^v1:/);
    expect(row!.dkim_private_key).not.to.contain('PRIVATE KEY');
    await s.api.deps.sql`update domains set status = 'verified', verified_at = now() where id = ${created.json.id}`;
    await s.api.deps.auth.invalidateOrg(s.org.organization.id);
    const testKey = await s.org.mint({ permission: 'SEND', mode: 'test' });
    const res = await s.api.request('POST', '/emails', {
      token: testKey.token,
      body: { from: 'hello@sealed.test', to: 'ann@dest.test', subject: 'Sealed', text: 'Signed.' },
    });
    expect(res.status, res.text).to.equal(200);
    const sent = res.json.id as string;
    const raw = await waitFor('the stored message', async () => {
      const r = await s.api.request('GET', `/emails/${sent}/raw`, { token: testKey.token });
      return r.status === 200 ? Buffer.from(r.text) : null;
    });
    const result = await dkimVerify(raw, {
      resolver: async (name: string, rr: string) => {
        if (rr === 'TXT' && name === 'tern._domainkey.sealed.test') {
          return [[`v=DKIM1; k=rsa; p=${row!.dkim_public_key}`]];
        }
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });
    expect(result.results[0]!.status.result).to.equal('pass');
  });

  it('reads rows stored in plain text, and `tern migrate` seals them', async () => {
    const plain = 'whsec_storedbeforesealing0123456789';
    const [wh] = await s.api.deps.sql<{ id: string }[]>`
      insert into webhooks (id, org_id, url, events, signing_secret)
      values ('wh_PLAINTEXT0000000000000000', ${s.org.organization.id}, ${`${s.receiver.url}/plain`},
        ${['email.sent']}, ${plain})
      returning id`;
    await giveDkimKey(s.api.deps.sql, s.org.domains['acme.test']!.id);
    expect((await stored()).filter((v) => !v.startsWith('v1:'))).to.have.length(2);
    const before = await testEvent(s.api, wh!.id);
    expect(verify(before.raw, before.headers['tern-signature'], plain)).to.equal(true);

    const out = cliJson(await tern(s.api, ['migrate', '--json'], { SECRET_KEY: s.api.config.secretKey }));
    expect(out).to.deep.equal({ applied: [], sealed: 2 });
    expect((await stored()).filter((v) => !v.startsWith('v1:'))).to.deep.equal([]);
    expect((await stored()).join('\n')).not.to.contain('PRIVATE KEY');
    const after = await testEvent(s.api, wh!.id);
    expect(verify(after.raw, after.headers['tern-signature'], plain)).to.equal(true);
    // Run again: nothing left to seal.
    expect(cliJson(await tern(s.api, ['migrate', '--json'], { SECRET_KEY: s.api.config.secretKey }))).to.deep.equal({
      applied: [],
      sealed: 0,
    });
  });

  it('`tern secrets rotate` seals every row under a new SECRET_KEY, opening the old ones with SECRET_KEY_PREVIOUS', async () => {
    const wh = await s.createWebhook({ url: `${s.receiver.url}/rotated`, events: ['email.sent'] });
    const count = (await stored()).length;

    const refused = await tern(s.api, ['secrets', 'rotate', '--json'], { SECRET_KEY: NEW_KEY });
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.contain('SECRET_KEY_PREVIOUS');
    expect(JSON.parse(refused.stdout)).to.include({ sealed: 0, unknown_key: count });

    const env = { SECRET_KEY: NEW_KEY, SECRET_KEY_PREVIOUS: s.api.config.secretKey };
    const out = cliJson(await tern(s.api, ['secrets', 'rotate', '--json'], env));
    expect(out).to.include({ sealed: count, unknown_key: 0 });
    expect(out.key_id).to.match(/^[0-9a-f]{8}$/);
    expect((await stored()).every((v) => v.startsWith(`v1:${out.key_id as string}:`))).to.equal(true);
    expect(cliJson(await tern(s.api, ['secrets', 'rotate', '--json'], env))).to.include({ sealed: 0 });

    // An install on the new key signs with the same secret as before.
    const next = await startApi({ db: s.api.db, env: { SECRET_KEY: NEW_KEY } });
    const nextDeps = workerDepsFor(next);
    const worker: Worker = startWebhookDelivery(nextDeps, { schedule: [150, 300] });
    try {
      const req = await testEvent(next, wh.id);
      expect(verify(req.raw, req.headers['tern-signature'], wh.signing_secret)).to.equal(true);
    } finally {
      await worker.close();
      await nextDeps.close();
      await next.close();
    }
  });
});
