// The console's management pages, server side: webhook endpoints (create with the secret shown
// once, edit, test send, delivery log with its filters and the first 1 KB of each answer, replay of
// one delivery and of the failed deliveries of a time range, rotate, delete), domains (add with the
// records to publish, tracking settings, delete after a confirmation) and the Queues page's live
// numbers. Members are refused every one of them.
import { expect } from 'chai';
import { providerRates } from '../../shared/mail/throttle.js';
import { secretBox } from '../../shared/secrets.js';
import { seedContent, type SeededContent } from '../helpers/console-seed.js';
import { seedOrg } from '../helpers/seed.js';
import { startSweeper } from '../../workers/delivery/schedule.js';
import { ConsoleClient, expectPageError } from '../helpers/console.js';
import type { Received } from '../helpers/receiver.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { seedEmail, seedEvent } from '../helpers/webhook-seed.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

const LONG = 'x'.repeat(3000);

describe('console management pages', function () {
  this.timeout(60_000);
  let s: WebhookStack;
  let admin: ConsoleClient;
  let member: ConsoleClient;
  /** Paths answered 500 until the test flips it. */
  let failing = true;

  before(async () => {
    s = await startWebhookStack({
      respond: (req: Received) => {
        if (req.path.startsWith('/flaky') && failing)
          return (res) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`broken ${LONG}`);
        return 200;
      },
      // One attempt, then failed: the replay is what sends it again.
      delivery: { schedule: [] },
    });
    admin = new ConsoleClient(s.api.url);
    expect((await admin.login(s.org.user.email, s.org.user.password)).status).to.equal(303);
    const added = await admin.post('/console/users', { email: `m-${Date.now()}@example.test`, role: 'member' });
    const email = /(m-\d+@example\.test) can now sign in/.exec(added.text)![1]!;
    const password = /data-password>([^<]+)</.exec(added.text)![1]!;
    member = new ConsoleClient(s.api.url);
    expect((await member.login(email, password)).status).to.equal(303);
  });
  after(async () => s.close());

  const deliveries = (webhookId: string) =>
    s.api.deps.sql<{ id: string; status: string; attempts: number; event_type: string }[]>`
      select id, status, attempts, event_type from webhook_deliveries where webhook_id = ${webhookId} order by id`;

  async function createEndpoint(path: string, events = ['email.delivered', 'email.bounced']): Promise<string> {
    await admin.get('/console/webhooks');
    const res = await admin.post('/console/webhooks', { url: `${s.receiver.url}${path}`, description: 'shop', events });
    expect(res.status, res.text).to.equal(201);
    const secret = /<code class="token" data-secret>([^<]+)<\/code>/.exec(res.text)![1]!;
    const [row] = await s.api.deps.sql<{ id: string; signing_secret: string; events: string[] }[]>`
      select id, signing_secret, events from webhooks where url = ${`${s.receiver.url}${path}`}`;
    expect(row!.signing_secret).to.match(/^v1:/);
    expect(secretBox(s.api.config).open(row!.signing_secret, 'webhook-secret')).to.equal(secret);
    expect(row!.events).to.deep.equal(events);
    // Shown once: the endpoint's page never carries it.
    expect((await admin.get(`/console/webhooks/${row!.id}`)).text).not.to.contain(secret);
    return row!.id;
  }

  describe('webhooks', () => {
    it('creates an endpoint, sends a test event and shows the request and the answer in the log', async () => {
      const id = await createEndpoint('/ok');
      const test = await admin.post(`/console/webhooks/${id}/test`, { type: 'email.bounced' });
      expect(test.status).to.equal(303);
      const [got] = await s.receiver.waitForRequests(1, (r) => r.path === '/ok');
      expect(JSON.parse(got!.raw.toString()).type).to.equal('email.bounced');
      await waitFor('the delivery to succeed', async () => (await deliveries(id))[0]?.status === 'succeeded');
      const [d] = await deliveries(id);
      const log = await admin.get(`/console/webhooks/${id}`);
      expect(log.text).to.contain(`data-delivery="${d!.id}"`);
      const detail = await admin.get(`/console/webhooks/${id}/deliveries/${d!.id}`);
      expect(detail.status).to.equal(200);
      expect(detail.text).to.match(
        /<pre class="body" tabindex="0" data-request>[^<]*&#34;type&#34;: &#34;email\.bounced&#34;/,
      );
      expect(detail.text).to.contain('HTTP 200');
      expect(detail.text).to.match(/data-response>ok<\/pre>/);
    });

    it('keeps the first 1 KB of a failed answer, filters the log, and replays one delivery', async () => {
      failing = true;
      const id = await createEndpoint('/flaky');
      await admin.post(`/console/webhooks/${id}/test`, { type: 'email.delivered' });
      await admin.post(`/console/webhooks/${id}/test`, { type: 'email.bounced' });
      await waitFor(
        'both to fail',
        async () => (await deliveries(id)).filter((d) => d.status === 'failed').length === 2,
      );
      const [first, second] = await deliveries(id);
      const [attempt] = await s.api.deps.sql<{ response_body: string }[]>`
        select response_body from webhook_attempts where delivery_id = ${first!.id}`;
      expect(attempt!.response_body).to.equal(`broken ${LONG}`.slice(0, 1024));

      const byType = await admin.get(`/console/webhooks/${id}?status=failed&type=email.bounced`);
      const shown = byType.text.match(/data-delivery="(dlv_\w+)"/g) ?? [];
      expect(shown).to.deep.equal([`data-delivery="${second!.id}"`]);
      const none = await admin.get(`/console/webhooks/${id}?status=succeeded`);
      expect(none.text).to.contain('No delivery matches.');

      const confirm = await admin.get(`/console/webhooks/${id}/deliveries/${first!.id}/replay`);
      expect(confirm.text).to.contain('Replay this delivery?');
      expect((await deliveries(id))[0]!.status).to.equal('failed'); // nothing changes before the POST
      failing = false;
      const replay = await admin.post(`/console/webhooks/${id}/deliveries/${first!.id}/replay`);
      expect(replay.status).to.equal(303);
      await waitFor('the replayed delivery', async () => (await deliveries(id))[0]!.status === 'succeeded');
      expect((await deliveries(id))[0]!.attempts).to.equal(2);
      expect((await deliveries(id))[1]!.status).to.equal('failed');
    });

    it('replays every failed delivery of a time range, and only those', async () => {
      failing = true;
      const id = await createEndpoint('/flaky-range');
      for (let i = 0; i < 3; i++) await admin.post(`/console/webhooks/${id}/test`, { type: 'email.delivered' });
      await waitFor(
        'three failures',
        async () => (await deliveries(id)).filter((d) => d.status === 'failed').length === 3,
      );
      // One of them is older than the range.
      const [old] = await deliveries(id);
      await s.api.deps.sql`update webhook_deliveries set created_at = now() - interval '3 days' where id = ${old!.id}`;
      const from = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
      const to = new Date(Date.now() + 3600_000).toISOString().slice(0, 16);
      const confirm = await admin.get(`/console/webhooks/${id}/replay?from=${from}&to=${to}`);
      expect(confirm.status).to.equal(200);
      expect(confirm.text).to.match(/2 failed deliveries/);
      failing = false;
      const fields = {
        from: /name="from" value="([^"]+)"/.exec(confirm.text)![1]!,
        to: /name="to" value="([^"]+)"/.exec(confirm.text)![1]!,
      };
      const res = await admin.post(`/console/webhooks/${id}/replay`, fields);
      expect(res.status).to.equal(303);
      expect(new URLSearchParams(res.location!.split('?')[1]).get('done')).to.equal(
        '2 failed deliveries queued again.',
      );
      await waitFor(
        'the two in range to succeed',
        async () => (await deliveries(id)).filter((d) => d.status === 'succeeded').length === 2,
      );
      expect((await deliveries(id)).find((d) => d.id === old!.id)!.status).to.equal('failed');
      const bad = await admin.post(`/console/webhooks/${id}/replay`, { from: to, to: from });
      expectPageError(bad, 422, 'validation_error');
    });

    it('edits, disables, rotates (new secret once) and deletes an endpoint after confirmations', async () => {
      const id = await createEndpoint('/edit');
      const edit = await admin.post(`/console/webhooks/${id}`, {
        url: `${s.receiver.url}/edited`,
        description: '',
        events: ['email.opened'],
        status: 'disabled',
      });
      expect(edit.status).to.equal(303);
      const [row] = await s.api.deps
        .sql`select url, events, status, description, signing_secret from webhooks where id = ${id}`;
      expect(row).to.deep.include({
        url: `${s.receiver.url}/edited`,
        events: ['email.opened'],
        status: 'disabled',
        description: null,
      });
      expectPageError(await admin.post(`/console/webhooks/${id}/test`, { type: 'email.opened' }), 409, 'invalid_state');
      expectPageError(
        await admin.post(`/console/webhooks/${id}`, { url: 'ftp://x', events: ['email.opened'], status: 'enabled' }),
        422,
        'validation_error',
      );

      expect((await admin.get(`/console/webhooks/${id}/rotate`)).text).to.contain('Rotate the signing secret?');
      const rotated = await admin.post(`/console/webhooks/${id}/rotate`);
      const secret = /data-secret>([^<]+)</.exec(rotated.text)![1]!;
      const [after] = await s.api.deps.sql`select signing_secret, previous_secret from webhooks where id = ${id}`;
      expect(secretBox(s.api.config).open(after!.signing_secret as string, 'webhook-secret')).to.equal(secret);
      expect(after!.previous_secret).to.equal(row!.signing_secret);

      expect((await admin.get(`/console/webhooks/${id}/delete`)).text).to.contain('Delete this endpoint?');
      const gone = await admin.post(`/console/webhooks/${id}/delete`);
      expect(gone.status).to.equal(303);
      expect(await s.api.deps.sql`select 1 from webhooks where id = ${id}`).to.have.length(0);
      expectPageError(await admin.get(`/console/webhooks/${id}`), 404, 'not_found');
    });

    it("keeps an endpoint's organization events when it is saved in the console", async () => {
      const events = ['email.delivered', 'domain.failed', 'webhook.disabled'];
      const { id } = await s.createWebhook({ url: `${s.receiver.url}/org`, events });
      const page = await admin.get(`/console/webhooks/${id}`);
      // The form offers every type the API accepts, the endpoint's own ones checked.
      const checked = [...page.text.matchAll(/name="events" value="([^"]+)"\s+checked/g)].map((m) => m[1]!);
      expect(checked).to.have.members(events);
      expect(page.text).to.contain('value="organization.paused"');
      // Saving the form as a browser sends it (the checked boxes) keeps them.
      const saved = await admin.post(`/console/webhooks/${id}`, {
        url: `${s.receiver.url}/org`,
        description: '',
        events: checked,
        status: 'enabled',
      });
      expect(saved.status, saved.text).to.equal(303);
      const [row] = await s.api.deps.sql<{ events: string[] }[]>`select events from webhooks where id = ${id}`;
      expect(row!.events).to.have.members(events);
      // And an organization event can be sent as a test from the console.
      expect((await admin.post(`/console/webhooks/${id}/test`, { type: 'domain.failed' })).status).to.equal(303);
    });

    it('refuses members and escapes what the endpoint sent back', async () => {
      const id = await createEndpoint('/x');
      expectPageError(await member.get('/console/webhooks'), 403, 'forbidden');
      expectPageError(await member.get(`/console/webhooks/${id}`), 403, 'forbidden');
      expectPageError(await member.post(`/console/webhooks/${id}/delete`), 403, 'forbidden');
      expect(await s.api.deps.sql`select 1 from webhooks where id = ${id}`).to.have.length(1);
      const [d] = await s.api.deps.sql<{ id: string }[]>`
        insert into webhook_deliveries (id, webhook_id, org_id, event_id, event_type, body, status, attempts)
        values ('dlv_01JAAAAAAAAAAAAAAAAAAAAAAA', ${id}, ${s.org.organization.id}, 'evt_x', 'email.sent', '\\x7b7d', 'failed', 1)
        returning id`;
      await s.api.deps.sql`insert into webhook_attempts (delivery_id, attempt, finished_at, status_code, response_body)
        values (${d!.id}, 1, now(), 500, '<script>alert(1)</script>')`;
      const page = await admin.get(`/console/webhooks/${id}/deliveries/${d!.id}`);
      expect(page.text).to.contain('&#60;script&#62;alert(1)&#60;/script&#62;');
      expect(page.text).not.to.contain('<script>alert');
    });
  });

  describe('domains', () => {
    it('adds a domain and shows its records with copy buttons, saves tracking, deletes after a confirmation', async () => {
      await admin.get('/console/domains');
      const res = await admin.post('/console/domains', { name: 'New-Shop.test' });
      expect(res.status, res.text).to.equal(303);
      const [d] = await s.api.deps.sql<{ id: string; records: { name: string; value: string }[] }[]>`
        select id, records from domains where name = 'new-shop.test' and org_id = ${s.org.organization.id}`;
      expect(res.location).to.match(new RegExp(`^/console/domains/${d!.id}\\?done=`));
      const page = await admin.get(`/console/domains/${d!.id}`);
      expect(page.text).to.contain('<h1>new-shop.test</h1>');
      for (const [i, r] of d!.records.entries()) {
        expect(page.text).to.contain(`<code id="rec-${i}-value">${r.value.replace(/"/g, '&#34;')}</code>`);
        expect(page.text).to.contain(`data-copy="#rec-${i}-value"`);
      }
      // Record kinds in words; the API's codes stay in data attributes only.
      expect(page.text).to.contain('Bounces (MX)').and.to.contain('data-record="MX_BOUNCE"');
      expect(page.text).not.to.match(/>\s*MX_BOUNCE\s*</);
      // After a check, the banner's colour is its news: red while the records are not found.
      await s.api.deps.sql`update domains set status = 'failed' where id = ${d!.id}`;
      const failed = await admin.get(`/console/domains/${d!.id}?checked=1`);
      expect(failed.text).to.match(/class="banner warn"[^>]*data-banner="warn">DNS checked: new-shop.test is failed\./);
      expect(failed.text).not.to.contain('class="banner ok"');
      expectPageError(await admin.post('/console/domains', { name: 'new-shop.test' }), 409, 'conflict');
      expectPageError(await admin.post('/console/domains', { name: 'not a domain' }), 422, 'validation_error');

      const tracked = await admin.post(`/console/domains/${d!.id}/tracking`, { opens: 'off', clicks: 'default' });
      expect(tracked.status).to.equal(303);
      const [t] = await s.api.deps.sql`select track_opens, track_clicks from domains where id = ${d!.id}`;
      expect(t).to.deep.equal({ track_opens: false, track_clicks: null });
      const api = await s.api.request('GET', `/domains/${d!.id}`, { token: s.org.key.token });
      expect(api.json).to.deep.include({ open_tracking: false, click_tracking: null });

      expectPageError(await member.post(`/console/domains/${d!.id}/delete`), 403, 'forbidden');
      expect((await admin.get(`/console/domains/${d!.id}/delete`)).text).to.contain('Delete this domain?');
      expect(await s.api.deps.sql`select 1 from domains where id = ${d!.id}`).to.have.length(1);
      const gone = await admin.post(`/console/domains/${d!.id}/delete`);
      expect(gone.status).to.equal(303);
      expect(await s.api.deps.sql`select 1 from domains where id = ${d!.id}`).to.have.length(0);
    });

    it('shows the demo domain without records or a Verify button; a verify posted anyway keeps it verified', async () => {
      await admin.get('/console/domains');
      expect((await admin.post('/console/domains', { name: 'demo-page.test' })).status).to.equal(303);
      const [d] = await s.api.deps.sql<{ id: string }[]>`
        update domains set demo = true, status = 'verified', verified_at = now()
        where name = 'demo-page.test' and org_id = ${s.org.organization.id} returning id`;
      const page = await admin.get(`/console/domains/${d!.id}`);
      expect(page.text).to.contain('not checked against DNS').and.to.contain('Nothing to publish');
      expect(page.text).not.to.contain('Verify DNS now').and.not.to.contain('rec-0-value');
      const checked = await admin.post(`/console/domains/${d!.id}/verify`);
      expect(checked.status).to.equal(303);
      expect(checked.location).to.equal(`/console/domains/${d!.id}?checked=1`);
      expect((await admin.get(checked.location!)).text).to.contain(
        'data-banner="ok">DNS checked: demo-page.test is verified.',
      );
      const [after] = await s.api.deps.sql`select status, last_checked_at from domains where id = ${d!.id}`;
      expect(after).to.deep.equal({ status: 'verified', last_checked_at: null });
    });
  });

  describe('queues', () => {
    it('shows every queue with its counts and workers, provider rates, block replies and the last sweep', async () => {
      const { api } = s;
      const deps = workerDepsFor(api);
      try {
        // A provider slowed by a block reply: its bucket at half rate, and the reply as an event.
        await api.deps.redis.hset(
          api.deps.redisKeys.providerBucket('gmail'),
          'rate',
          '250',
          'tokens',
          '0',
          'ts',
          String(Date.now() / 1000),
        );
        const email = await seedEmail(api.deps.sql, {
          orgId: s.org.organization.id,
          domainId: s.org.domains['acme.test']!.id,
          to: ['a@gmail.com'],
        });
        await seedEvent(api.deps.sql, email, 'email.delivery_delayed', 'a@gmail.com', {
          provider: 'gmail',
          blocked: true,
          data: { response: '421 4.7.28 unusual rate of <unsolicited> mail' },
        });
        await startSweeper.sweep(deps, 60);
        const page = await admin.get('/console/queues');
        expect(page.status).to.equal(200);
        for (const q of ['delivery', 'webhook-delivery', 'webhook-fanout'])
          expect(page.text).to.contain(`data-queue="${q}"`);
        const row = page.text.split('data-queue="webhook-delivery"')[1]!.split('</tr>')[0]!;
        expect(row).to.match(/data-workers><span class="badge ok">[1-9]\d*<\/span>/);
        const gmail = page.text.split('data-provider="gmail"')[1]!.split('</tr>')[0]!;
        expect(gmail).to.match(/25\d msg\/s/);
        expect(gmail).to.contain('slowed');
        expect(gmail).to.contain('421 4.7.28 unusual rate of &#60;unsolicited&#62; mail');
        expect(page.text).to.match(/data-sweep>\s*Finished <time/);
        const rates = await providerRates(api.deps.redis, api.deps.redisKeys);
        expect(rates.find((r) => r.provider === 'gmail')!.slowed).to.equal(true);
        expectPageError(await member.get('/console/queues'), 403, 'forbidden');
        expect((await member.get('/console')).text).not.to.contain('href="/console/queues"');
      } finally {
        await deps.close();
      }
    });
  });

  describe('content, audience and settings', () => {
    let c: SeededContent;
    before(async () => {
      c = await seedContent(s.api, s.org);
    });

    it('answers every page, for members too (settings: admins only)', async () => {
      for (const [name, path] of c.pages) {
        const res = await admin.get(path);
        expect(res.status, `${name} ${res.text.slice(0, 200)}`).to.equal(200);
        expect(res.text.match(/<h1>/g), name).to.have.length(1);
        if (name !== 'settings') expect((await member.get(path)).status, `member ${name}`).to.equal(200);
      }
      expectPageError(await member.get('/console/settings'), 403, 'forbidden');
      const counts = (await admin.get('/console/contacts')).text;
      expect(counts).to.match(/<dt>Contacts<\/dt>\s*<dd>3<\/dd>/);
      expect((await admin.get('/console/contacts?email=BOB@dest.test')).text.match(/data-contact=/g)).to.have.length(1);
      expect((await admin.get('/console/segments')).text).to.match(
        /Pro plan<\/a><\/td>\s*<td data-label="Contacts" class="num">2<\/td>/,
      );
    });

    it('previews a template as sending renders it, saves the draft and publishes a new version', async () => {
      const saved = await admin.get(`/console/templates/${c.templateId}/preview`);
      expect(saved.headers['content-security-policy']).to.contain('sandbox');
      expect(saved.text).to.contain('Hello [first_name]</h1><p>Your plan: free</p>');
      const page = await admin.get(`/console/templates/${c.templateId}`);
      const edit = { subject: 'Hi {{first_name}}', html: '<p>Dear {{first_name}} on {{plan}} & more</p>', text: '' };
      const posted = await admin.post(`/console/templates/${c.templateId}/preview`, edit);
      expect(posted.text).to.equal('<p>Dear [first_name] on free & more</p>');
      const broken = await admin.post(`/console/templates/${c.templateId}/preview`, { ...edit, html: '{{nope}}' });
      expect(broken.text).to.contain('uses the variable &#34;nope&#34;');
      expect(page.text).to.contain('data-preview-button');
      expectPageError(await member.post(`/console/templates/${c.templateId}`, edit), 403, 'forbidden');
      expectPageError(
        await admin.post(`/console/templates/${c.templateId}`, { ...edit, html: '{{nope}}' }),
        422,
        'validation_error',
      );
      expect((await admin.post(`/console/templates/${c.templateId}`, edit)).status).to.equal(303);
      const [draft] = await s.api.deps
        .sql`select html, text, published_version from templates where id = ${c.templateId}`;
      expect(draft).to.deep.equal({ html: edit.html, text: null, published_version: 1 });
      expect((await admin.get(`/console/templates/${c.templateId}/publish`)).text).to.contain('becomes version 2');
      expect((await admin.post(`/console/templates/${c.templateId}/publish`)).status).to.equal(303);
      const [v] = await s.api.deps
        .sql`select html from template_versions where template_id = ${c.templateId} and version = 2`;
      expect(v!.html).to.equal(edit.html);
    });

    it("shows a broadcast's progress from its messages, and the fragment the page refreshes", async () => {
      const sql = s.api.deps.sql;
      const dom = s.org.domains['acme.test']!.id;
      const states: [string, string | null, string | null][] = [
        ['queued', null, null],
        ['delivered', 'now()', 'now()'],
        ['delivered', 'now()', null],
        ['bounced', null, null],
      ];
      for (const [i, [status, delivered, opened]] of states.entries()) {
        const e = await seedEmail(sql, { orgId: s.org.organization.id, domainId: dom, to: [`p${i}@dest.test`] });
        await sql`update email_recipients set status = ${status},
          delivered_at = ${delivered ? new Date() : null}, opened_at = ${opened ? new Date() : null}
          where email_id = ${e.id}`;
        await sql`insert into broadcast_recipients (broadcast_id, contact_id, email_id, outcome)
          values (${c.broadcastId}, ${`ct_${i}`}, ${e.id}, 'sent')`;
      }
      await sql`update broadcasts set status = 'sending' where id = ${c.broadcastId}`;
      const page = await admin.get(`/console/broadcasts/${c.broadcastId}`);
      expect(page.text).to.contain(`data-live="/console/broadcasts/${c.broadcastId}/progress"`);
      const frag = await admin.get(`/console/broadcasts/${c.broadcastId}/progress`);
      expect(frag.headers['x-broadcast-status']).to.equal('sending');
      const numbers = [...frag.text.matchAll(/<dt>(\w+)<\/dt>\s*<dd>(\d+)<\/dd>/g)].map((m) => `${m[1]} ${m[2]}`);
      expect(numbers).to.deep.equal(['Queued 1', 'Sent 3', 'Delivered 2', 'Bounced 1', 'Opened 1']);

      // The list says how many of the messages a cancel took back.
      const [b] = await sql<{ mode: string }[]>`
        update broadcasts set count_sent = 4, count_canceled = 1 where id = ${c.broadcastId} returning mode`;
      const list = await admin.get(`/console/broadcasts?mode=${b!.mode}`);
      expect(list.text).to.match(
        new RegExp(
          `data-broadcast="${c.broadcastId}"[^]*?>\\s*4<br /><span class="muted" data-canceled="1"\\s*>1 canceled</span`,
        ),
      );
      expect(page.text).to.not.contain('data-canceled');
    });

    it('shows a received reply in its thread, escaped', async () => {
      const page = await admin.get(`/console/inbound/${c.inboundId}`);
      expect(page.text.match(/data-thread-item=/g)).to.have.length(2);
      expect(page.text).to.contain('Thread (2 replies)');
      expect(page.text).to.contain('One more question: &#60;when&#62; does it ship?');
      expect(page.text).to.contain(`href="/console/emails/${c.emailId}"`);
    });

    it("shows another organization's admin nothing of this one (404 on every detail page)", async () => {
      const other = await seedOrg(s.api.deps.sql, { domains: [{ name: 'other-org.test' }] });
      const stranger = new ConsoleClient(s.api.url);
      expect((await stranger.login(other.user.email, other.user.password)).status).to.equal(303);
      const [hook] = await s.api.deps.sql<{ id: string }[]>`
        select id from webhooks where org_id = ${s.org.organization.id} limit 1`;
      const detail = c.pages.map(([, path]) => path).filter((p) => /_[0-9A-Z]{26}/.test(p));
      detail.push(
        `/console/webhooks/${hook!.id}`,
        `/console/domains/${s.org.domains['acme.test']!.id}`,
        `/console/broadcasts/${c.broadcastId}/progress`,
        `/console/templates/${c.templateId}/preview`,
      );
      expect(detail.length).to.be.greaterThan(8);
      for (const path of detail) expectPageError(await stranger.get(path), 404, 'not_found');
      expectPageError(await stranger.post(`/console/templates/${c.templateId}/publish`), 404, 'not_found');
      expectPageError(await stranger.post(`/console/webhooks/${hook!.id}/delete`), 404, 'not_found');
      expect(await s.api.deps.sql`select 1 from webhooks where id = ${hook!.id}`).to.have.length(1);
      for (const path of ['/console/inbound', '/console/contacts', '/console/templates', '/console/broadcasts']) {
        const res = await stranger.get(path);
        expect(res.text).not.to.contain(c.templateId);
        expect(res.text).not.to.contain('ann@dest.test');
      }
    });

    it('pauses and resumes sending with a reason, sets tracking defaults and alert rules', async () => {
      const orgId = s.org.organization.id;
      const org = async () => (await s.api.deps.sql`select * from organizations where id = ${orgId}`)[0]!;
      await admin.get('/console/settings');
      expectPageError(await admin.post('/console/settings/pause', { reason: '' }), 422, 'validation_error');
      expect((await admin.post('/console/settings/pause', { reason: 'List cleanup <today>' })).status).to.equal(303);
      expect(await org()).to.deep.include({ sending_paused: true, sending_paused_reason: 'List cleanup <today>' });
      const paused = await s.api.request('POST', '/emails', {
        token: s.org.key.token,
        body: { from: 'a@acme.test', to: ['x@dest.test'], subject: 'x', text: 'x' },
      });
      expect(paused.json.error.code).to.equal('sending_paused');
      expect((await admin.get('/console/settings')).text).to.contain('Reason: List cleanup &#60;today&#62;');
      expect((await admin.post('/console/settings/resume')).status).to.equal(303);
      expect(await org()).to.deep.include({ sending_paused: false, sending_paused_reason: null });

      await admin.post('/console/settings/tracking', { opens: 'off', clicks: 'on' });
      expect(await org()).to.deep.include({ track_opens: false, track_clicks: true });
      const rule = { metric: 'complaint', threshold: '0.3', window_days: '1', min_volume: '100', action: 'pause' };
      expect((await admin.post('/console/settings/alerts', rule)).status).to.equal(303);
      expect((await org()).alert_rules).to.deep.equal([
        { metric: 'complaint', threshold: 0.3, min_volume: 100, window_days: 1, action: 'pause' },
      ]);
      const api = await s.api.request('GET', '/organization', { token: s.org.key.token });
      expect(api.json.alert_rules).to.have.length(1);
      expectPageError(
        await admin.post('/console/settings/alerts', { ...rule, threshold: '0' }),
        422,
        'validation_error',
      );
      expect((await admin.post('/console/settings/alerts/remove', { index: '0' })).status).to.equal(303);
      expect((await org()).alert_rules).to.deep.equal([]);
      expectPageError(await member.post('/console/settings/pause', { reason: 'x' }), 403, 'forbidden');
    });
  });
});
