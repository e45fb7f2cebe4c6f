import { expect } from 'chai';
import { applyDeltas, type Delta } from '../../shared/db/metrics.js';
import { insertDomain } from '../../shared/db/domains.js';
import { insertWebhook } from '../../shared/db/webhooks.js';
import { secretBox } from '../../shared/secrets.js';
import { ConsoleClient, expectPageError } from '../helpers/console.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';

const XSS = '<script>alert(1)</script>';

function day(offset: number): string {
  return new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
}

/** The key id of a freshly minted key, read off the result page. */
function mintedId(text: string): string {
  return /<code>(key_[0-9A-Za-z]+)<\/code>/.exec(text)![1]!;
}

function mintedToken(text: string): string {
  return /<code class="token" data-token>([^<]+)<\/code>/.exec(text)![1]!;
}

describe('web console', () => {
  let api: TestApi;
  let dns: TestDns;
  let org: SeededOrg;
  let admin: ConsoleClient;
  let member: ConsoleClient;
  let memberEmail: string;
  let memberPassword: string;

  before(async function () {
    this.timeout(60_000);
    dns = await startDns();
    api = await startApi({ env: { DNS_SERVERS: dns.server, MX_HOST: 'mx.tern-install.test' } });
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test', verified: false }] });
    admin = new ConsoleClient(api.url);
    expect((await admin.login(org.user.email, org.user.password)).status).to.equal(303);
    const added = await admin.post('/console/users', { email: `member-${Date.now()}@example.test`, role: 'member' });
    expect(added.status).to.equal(201);
    memberEmail = /(member-\d+@example\.test) can now sign in/.exec(added.text)![1]!;
    memberPassword = /data-password>([^<]+)</.exec(added.text)![1]!;
    member = new ConsoleClient(api.url);
    expect((await member.login(memberEmail, memberPassword)).status).to.equal(303);
  });
  after(async () => {
    await api.close();
    await dns.close();
  });

  describe('sign-in', () => {
    it('signs in with a session cookie scoped to /console, HttpOnly, SameSite=Lax, not Secure on http', async () => {
      const c = new ConsoleClient(api.url);
      const res = await c.post(
        '/console/login',
        { email: org.user.email, password: org.user.password },
        { csrf: false },
      );
      expect(res.status).to.equal(303);
      expect(res.location).to.equal('/console');
      expect(res.setCookie).to.have.length(2);
      const flags = res.setCookie[0]!.split(/;\s*/);
      expect(flags[0]).to.match(/^console_session=[A-Za-z0-9_-]{43}$/);
      expect(flags.slice(1)).to.have.members(['Path=/console', 'HttpOnly', 'SameSite=Lax']);
      // The device cookie of sign-in throttling: a nonce and its HMAC, a year.
      const device = res.setCookie[1]!.split(/;\s*/);
      expect(device[0]).to.match(/^console_device=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
      expect(device.slice(1)).to.have.members(['Path=/console', 'HttpOnly', 'SameSite=Lax', 'Max-Age=31536000']);
      const home = await c.get('/console');
      expect(home.status).to.equal(200);
      expect(home.text).to.contain(org.organization.name);
      expect(home.headers['cache-control']).to.equal('no-store');
      expect(home.headers['x-frame-options']).to.equal('DENY');
      // Only the hash of the id is stored.
      const id = flags[0]!.split('=')[1]!;
      const rows = await api.deps.sql`select id_hash from console_sessions where id_hash = ${id}`;
      expect(rows).to.have.length(0);
    });

    it('adds Secure when BASE_URL is https', async () => {
      const https = await startApi({ db: api.db, env: { BASE_URL: 'https://console.example.test' } });
      try {
        const c = new ConsoleClient(https.url);
        const res = await c.post(
          '/console/login',
          { email: org.user.email, password: org.user.password },
          { csrf: false },
        );
        expect(res.status).to.equal(303);
        expect(res.setCookie[0]!.split(/;\s*/)).to.include.members(['Secure', 'HttpOnly', 'SameSite=Lax']);
      } finally {
        await https.close();
      }
    });

    it('refuses a wrong password and an unknown email alike, without a cookie', async () => {
      const c = new ConsoleClient(api.url);
      const wrong = await c.post('/console/login', { email: org.user.email, password: 'nope' }, { csrf: false });
      const unknown = await c.post(
        '/console/login',
        { email: 'nobody@example.test', password: 'nope' },
        { csrf: false },
      );
      for (const res of [wrong, unknown]) {
        expectPageError(res, 401, 'login');
        expect(res.setCookie).to.have.length(0);
        expect(res.text).to.contain('Email or password is wrong.');
      }
      expect(c.cookie).to.equal(null);
      expect((await c.get('/console/keys')).location).to.equal('/console/login');
    });

    it('sends pages to the login page without a session, and a forged or expired cookie is no session', async () => {
      const c = new ConsoleClient(api.url);
      for (const path of ['/console', '/console/keys', '/console/metrics', '/console/domains']) {
        const res = await c.get(path);
        expect(res.status, path).to.equal(303);
        expect(res.location).to.equal('/console/login');
      }
      c.cookie = `console_session=${'A'.repeat(43)}`;
      expect((await c.get('/console')).location).to.equal('/console/login');

      const s = new ConsoleClient(api.url);
      await s.login(org.user.email, org.user.password);
      await api.deps.sql`update console_sessions set expires_at = now() - interval '1 second'
        where expires_at = (select max(expires_at) from console_sessions)`;
      expect((await s.get('/console')).location).to.equal('/console/login');
    });

    it('slides the expiry to 12 h from the last request', async () => {
      const c = new ConsoleClient(api.url);
      await c.login(org.user.email, org.user.password);
      const [s] = await api.deps.sql<{ id_hash: string }[]>`
        select id_hash from console_sessions order by created_at desc limit 1`;
      await api.deps
        .sql`update console_sessions set expires_at = now() + interval '1 minute' where id_hash = ${s!.id_hash}`;
      expect((await c.get('/console')).status).to.equal(200);
      const [row] = await api.deps.sql<{ left: number }[]>`
        select extract(epoch from expires_at - now())::int as left from console_sessions where id_hash = ${s!.id_hash}`;
      expect(row!.left).to.be.within(12 * 3600 - 60, 12 * 3600);
    });

    it('signs out: the session row is gone and the cookie cleared', async () => {
      const c = new ConsoleClient(api.url);
      await c.login(org.user.email, org.user.password);
      const cookie = c.cookie;
      const res = await c.post('/console/logout');
      expect(res.status).to.equal(303);
      expect(res.setCookie[0]).to.contain('Max-Age=0');
      c.cookie = cookie;
      expect((await c.get('/console')).location).to.equal('/console/login');
    });

    it('rate-limits sign-in per email and per IP (429 with Retry-After), even for the right password from a browser new to the account', async function () {
      this.timeout(60_000);
      // Its own Redis prefix: fresh buckets, so the other tests' sign-ins do not count here.
      const other = await startApi({ db: api.db });
      try {
        const c = new ConsoleClient(other.url);
        for (let i = 0; i < 10; i++) {
          const res = await c.post('/console/login', { email: memberEmail, password: 'wrong' }, { csrf: false });
          expectPageError(res, 401, 'login');
        }
        const blocked = await c.post(
          '/console/login',
          { email: memberEmail, password: memberPassword },
          { csrf: false },
        );
        expectPageError(blocked, 429, 'rate_limited');
        expect(Number(blocked.headers['retry-after'])).to.be.greaterThan(0);
        expect(blocked.setCookie).to.have.length(0);
        // 11 attempts from this IP so far; the IP bucket holds 20.
        for (let i = 0; i < 9; i++) {
          const res = await c.post('/console/login', { email: `x${i}@example.test`, password: 'x' }, { csrf: false });
          expectPageError(res, 401, 'login');
        }
        const ipBlocked = await c.post(
          '/console/login',
          { email: org.user.email, password: org.user.password },
          { csrf: false },
        );
        expectPageError(ipBlocked, 429, 'rate_limited');
      } finally {
        await other.close();
      }
    });

    it('does not let guesses from elsewhere lock the owner out of a browser that signed in before', async function () {
      this.timeout(60_000);
      // Client addresses from X-Forwarded-For: the owner and each guesser have their own.
      const other = await startApi({ db: api.db, env: { TRUST_PROXY: 'true' } });
      const from = (ip: string) => ({ csrf: false, headers: { 'x-forwarded-for': ip } });
      try {
        const owner = new ConsoleClient(other.url);
        const signIn = (c: ConsoleClient, password: string, ip: string) =>
          c.post('/console/login', { email: memberEmail, password }, from(ip));
        expect((await signIn(owner, memberPassword, '10.1.0.1')).status).to.equal(303);
        expect(owner.device).to.match(/^console_device=/);

        // Guesses from 30 addresses: the email's bucket (10) is soon empty.
        const answers: number[] = [];
        for (let i = 0; i < 30; i++)
          answers.push((await signIn(new ConsoleClient(other.url), 'guess', `10.2.0.${i}`)).status);
        expect(answers.slice(0, 10)).to.deep.equal(new Array(10).fill(401));
        expect(answers.slice(10)).to.deep.equal(new Array(20).fill(429));
        // A browser new to the account is refused even with the right password…
        expectPageError(await signIn(new ConsoleClient(other.url), memberPassword, '10.3.0.1'), 429, 'rate_limited');
        // …and so is one whose device cookie was issued for another account, or forged.
        const elsewhere = new ConsoleClient(other.url);
        expect(
          (
            await elsewhere.post(
              '/console/login',
              { email: org.user.email, password: org.user.password },
              from('10.4.0.1'),
            )
          ).status,
        ).to.equal(303);
        expectPageError(await signIn(elsewhere, memberPassword, '10.4.0.1'), 429, 'rate_limited');
        const forged = new ConsoleClient(other.url);
        forged.device = owner.device!.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
        expectPageError(await signIn(forged, memberPassword, '10.4.0.2'), 429, 'rate_limited');

        // The owner's browser signs in, from its address or another.
        owner.cookie = null;
        expect((await signIn(owner, memberPassword, '10.1.0.1')).status).to.equal(303);
        owner.cookie = null;
        expect((await signIn(owner, memberPassword, '10.5.0.1')).status).to.equal(303);
        // Its own guesses are throttled by its own bucket: a stolen device cookie is no way around the limit.
        for (let i = 0; i < 10; i++) expectPageError(await signIn(owner, 'wrong', `10.6.0.${i}`), 401, 'login');
        expectPageError(await signIn(owner, memberPassword, '10.6.0.99'), 429, 'rate_limited');
      } finally {
        await other.close();
      }
    });

    it('fills the email bucket again after a successful sign-in', async function () {
      this.timeout(60_000);
      const other = await startApi({ db: api.db });
      try {
        const c = new ConsoleClient(other.url);
        for (let i = 0; i < 9; i++) {
          const res = await c.post('/console/login', { email: memberEmail, password: 'wrong' }, { csrf: false });
          expectPageError(res, 401, 'login');
        }
        const ok = await c.post('/console/login', { email: memberEmail, password: memberPassword }, { csrf: false });
        expect(ok.status).to.equal(303);
        // The email's 10 tokens were spent; the sign-in gave them back (the IP bucket is at 10 of 20).
        for (let i = 0; i < 9; i++) {
          const res = await new ConsoleClient(other.url).post(
            '/console/login',
            { email: memberEmail, password: 'wrong' },
            { csrf: false },
          );
          expectPageError(res, 401, 'login');
        }
      } finally {
        await other.close();
      }
    });
  });

  describe('CSRF', () => {
    it('refuses a POST without the session token, with another token, and from another origin', async () => {
      const before = await api.deps.sql`select count(*)::int as n from api_keys`;
      const fields = { name: 'csrf', permission: 'SEND', mode: 'live' };
      const none = await admin.post('/console/keys', fields, { csrf: false });
      const forged = await admin.post('/console/keys', { ...fields, _csrf: 'x'.repeat(43) });
      const crossSite = await admin.post('/console/keys', fields, { headers: { origin: 'https://evil.example' } });
      for (const res of [none, forged, crossSite]) {
        expectPageError(res, 403, 'forbidden');
        expect(res.text).not.to.contain('data-token');
      }
      const afterCount = await api.deps.sql`select count(*)::int as n from api_keys`;
      expect(afterCount[0]!.n).to.equal(before[0]!.n);
      // Another session's token does not work either: tokens are tied to the session.
      await member.get('/console/keys');
      const crossed = await admin.post('/console/keys', { ...fields, _csrf: member.csrf! });
      expectPageError(crossed, 403, 'forbidden');
      await admin.get('/console/keys');
    });
  });

  describe('roles', () => {
    it('lets a member mint SEND keys only and keeps admin pages from them', async () => {
      const page = await member.get('/console/keys');
      expect(page.status).to.equal(200);
      expect(page.text).not.to.contain('value="FULL"');
      const full = await member.post('/console/keys', { name: 'm-full', permission: 'FULL', mode: 'live' });
      expectPageError(full, 403, 'forbidden');
      const adm = await member.post('/console/keys', { name: 'm-admin', permission: 'ADMIN', mode: 'live' });
      expectPageError(adm, 403, 'forbidden');
      const send = await member.post('/console/keys', { name: 'm-send', permission: 'SEND', mode: 'test' });
      expect(send.status).to.equal(201);
      for (const path of ['/console/domains', '/console/webhooks', '/console/users']) {
        const res = await member.get(path);
        expectPageError(res, 403, 'forbidden');
        expect(res.text).not.to.contain('acme.test');
      }
      const domainVerify = await member.post(`/console/domains/${org.domains['acme.test']!.id}/verify`);
      expectPageError(domainVerify, 403, 'forbidden');
      // The nav does not offer them either.
      expect(page.text).not.to.contain('href="/console/domains"');
      // A member cannot revoke the admin's ADMIN key.
      const revoke = await member.post(`/console/keys/${org.key.id}/revoke`);
      expectPageError(revoke, 403, 'forbidden');
      expect((await api.request('GET', '/keys/me', { token: org.key.token })).status).to.equal(200);
    });
  });

  describe('keys', () => {
    it('mints an ADMIN key whose token works on GET /keys/me and is shown only once', async () => {
      const res = await admin.post('/console/keys', {
        name: 'console admin',
        permission: 'ADMIN',
        mode: 'live',
        domains: [org.domains['acme.test']!.id],
      });
      expect(res.status).to.equal(201);
      const token = mintedToken(res.text);
      expect(token).to.match(/^tern_live_/);
      const me = await api.request('GET', '/keys/me', { token });
      expect(me.status).to.equal(200);
      expect(me.json).to.include({ id: mintedId(res.text), permission: 'ADMIN', mode: 'live', name: 'console admin' });
      expect(me.json.domains).to.deep.equal(['acme.test']);
      const list = await admin.get('/console/keys');
      expect(list.text).to.contain(mintedId(res.text));
      expect(list.text).to.contain(token.slice(0, 12));
      expect(list.text).not.to.contain(token);
      const test = await admin.post('/console/keys', { name: 'bad', permission: 'ADMIN', mode: 'test' });
      expectPageError(test, 422, 'validation_error');
    });

    it('revokes a key, and the API refuses its token at once (warm cache invalidated)', async () => {
      const res = await admin.post('/console/keys', { name: 'to revoke', permission: 'FULL', mode: 'live' });
      const token = mintedToken(res.text);
      expect((await api.request('GET', '/keys/me', { token })).status).to.equal(200);
      const revoke = await admin.post(`/console/keys/${mintedId(res.text)}/revoke`);
      expect(revoke.status).to.equal(303);
      expectError(await api.request('GET', '/keys/me', { token }), 401, 'unauthorized');
      const list = await admin.get('/console/keys');
      expect(list.text).to.match(new RegExp(`data-key-id="${mintedId(res.text)}"[^]*?revoked`));
    });

    it('rotates a SEND key with a grace period, and refuses to rotate an ADMIN key', async () => {
      const res = await admin.post('/console/keys', { name: 'to rotate', permission: 'SEND', mode: 'live' });
      const old = mintedToken(res.text);
      const id = mintedId(res.text);
      const rotated = await admin.post(`/console/keys/${id}/rotate`, { expires_in: '3600' });
      expect(rotated.status).to.equal(200);
      const fresh = mintedToken(rotated.text);
      expect(fresh).not.to.equal(old);
      expect((await api.request('GET', '/keys/me', { token: fresh })).json.id).to.equal(id);
      expect((await api.request('GET', '/keys/me', { token: old })).status).to.equal(200);
      const now = await admin.post(`/console/keys/${id}/rotate`, { expires_in: '0' });
      expect(now.status).to.equal(200);
      expectError(await api.request('GET', '/keys/me', { token: old }), 401, 'unauthorized');
      const adminRotate = await admin.post(`/console/keys/${org.key.id}/rotate`, { expires_in: '0' });
      expectPageError(adminRotate, 403, 'forbidden');
    });
  });

  describe('domains', () => {
    it('shows the records to publish and verifies a domain with the Verify button', async () => {
      const created = await api.request('POST', '/domains', { token: org.key.token, body: { name: 'console.test' } });
      expect(created.status).to.equal(201);
      const records = created.json.records as { name: string; type: string; value: string; priority?: number }[];
      expect((await admin.get('/console/domains')).text).to.contain('data-domain="console.test"');
      const before = await admin.get(`/console/domains/${created.json.id}`);
      // (Names may wrap after their dots: <wbr> between the labels.)
      for (const r of records) expect(before.text.replace(/<wbr \/>/g, '')).to.contain(r.name);
      const txt = new Map<string, string[]>();
      for (const r of records) {
        if (r.type === 'TXT') txt.set(r.name, [...(txt.get(r.name) ?? []), r.value]);
        else dns.mx(r.name, [{ exchange: r.value, priority: r.priority! }]);
      }
      for (const [name, values] of txt) dns.txt(name, values);
      const res = await admin.post(`/console/domains/${created.json.id}/verify`);
      expect(res.status).to.equal(303);
      expect((await admin.get(res.location!)).text).to.contain(
        'data-banner="ok">DNS checked: console.test is verified.',
      );
      const after = await api.request('GET', `/domains/${created.json.id}`, { token: org.key.token });
      expect(after.json.status).to.equal('verified');
      const me = await api.request('GET', '/keys/me', { token: org.key.token });
      expect(me.json.domains).to.include('console.test');
      const row = (await admin.get('/console/domains')).text.split('data-domain="console.test"')[1]!;
      expect(row.slice(0, row.indexOf('</tr>'))).to.contain('data-state="verified"');
    });
  });

  describe('metrics', () => {
    it('shows the same totals as GET /metrics, for the organization and for one domain', async () => {
      const dom = org.domains['acme.test']!.id;
      const deltas: Delta[] = [];
      for (let d = 0; d < 35; d++) {
        for (const provider of ['gmail', 'outlook']) {
          deltas.push({
            orgId: org.organization.id,
            day: day(d),
            domainId: d % 2 ? dom : '',
            provider,
            keyId: org.key.id,
            templateId: '',
            kind: '',
            counts: {
              sent: d + 3,
              delivered: d + 1,
              bounced_hard: d % 3,
              bounced_soft: 1,
              opened: d,
              complained: d % 5,
              opened_machine: d % 4,
              clicked_machine: 1,
            },
          });
        }
      }
      await applyDeltas(api.deps.sql, deltas);
      for (const query of ['', `?domain=${dom}`]) {
        const json = await api.request('GET', `/metrics${query.replace(dom, 'acme.test')}`, { token: org.key.token });
        expect(json.status).to.equal(200);
        const page = await member.get(`/console/metrics${query}`);
        expect(page.status).to.equal(200);
        const shown: Record<string, number> = {};
        for (const m of page.text.matchAll(/data-total="(\w+)"[^>]*>([\d,]+)</g)) {
          shown[m[1]!] = Number(m[2]!.replace(/,/g, ''));
        }
        expect(shown).to.deep.equal(json.json.totals);
        expect(json.json.totals.sent).to.be.greaterThan(0);
        expect(page.text).to.contain('<svg');
        expect(page.text).to.contain('data-provider="gmail"');
        const rate = /data-rate="delivery">([\d.]+)%/.exec(page.text)![1];
        expect(Number(rate)).to.equal(json.json.rates.delivery);
        // Headings in words, not the API's field names.
        expect(page.text)
          .to.match(/>\s*Hard bounces\s*</)
          .and.not.match(/>\s*bouncedHard\s*</);
        expect(page.text).to.match(/<dt>hard bounces<\/dt>\s*<dd data-rate="hardBounce">/);
        // People and machines apart (DESIGN §20).
        expect(json.json.totals.openedMachine).to.be.greaterThan(0);
        expect(page.text)
          .to.match(/>\s*Opened \(people\)\s*</)
          .and.match(/>\s*Opened \(machines\)\s*</);
        const machineRate =
          /<dt>opened by machines \(of delivered\)<\/dt>\s*<dd data-rate="openMachine">([\d.]+)%/.exec(page.text)![1];
        expect(Number(machineRate)).to.equal(json.json.rates.openMachine);
      }
    });
  });

  describe('overview', () => {
    it("shows a new organization's getting-started steps, ticking each off as it is done", async () => {
      const fresh = await seedOrg(api.deps.sql);
      const c = new ConsoleClient(api.url);
      await c.login(fresh.user.email, fresh.user.password);
      const steps = async () =>
        Object.fromEntries(
          [...(await c.get('/console')).text.matchAll(/data-step-done="(true|false)"[^]*?<strong>([^<]+)</g)].map(
            (m) => [m[2]!, m[1] === 'true'],
          ),
        );
      expect(await steps()).to.deep.equal({
        'Verify a domain of your own': false,
        'Mint an API key': false,
        'Send a first email': false,
        'Add a webhook': false,
      });
      await c.get('/console/keys');
      expect((await c.post('/console/keys', { name: 'app', permission: 'SEND', mode: 'test' })).status).to.equal(201);
      expect((await steps())['Mint an API key']).to.equal(true);
      // Once every step is done, the list is gone.
      await insertDomain(api.deps.sql, { orgId: fresh.organization.id, name: 'fresh.test', status: 'verified' });
      const key = await fresh.mint({ permission: 'SEND', mode: 'test' });
      const sent = await api.request('POST', '/emails', {
        token: key.token,
        body: { from: 'a@fresh.test', to: ['b@dest.test'], subject: 'Hi', text: 'Hi' },
      });
      expect(sent.status, sent.text).to.equal(200);
      await api.deps.sql`insert into webhooks (id, org_id, url, events, signing_secret)
        values ('wh_01JBBBBBBBBBBBBBBBBBBBBBBB', ${fresh.organization.id}, 'https://hooks.fresh.test/', '{email.sent}', 'whsec_x')`;
      expect((await c.get('/console')).text).not.to.contain('data-checklist');
    });

    it('switches the overview and metrics to test mail, counted from its events', async () => {
      const day = new Date().toISOString().slice(0, 10);
      const testKey = await org.mint({ permission: 'SEND', mode: 'test' });
      const sent = await api.request('POST', '/emails', {
        token: testKey.token,
        body: { from: 'a@acme.test', to: ['t1@dest.test', 't2@dest.test'], subject: 'Test', text: 'Hi' },
      });
      expect(sent.status, sent.text).to.equal(200);
      const [e] = await api.deps.sql<{ domain_id: string }[]>`select domain_id from emails where id = ${sent.json.id}`;
      const rcpts = await api.deps.sql<{ id: string; email: string }[]>`
        select id, email from email_recipients where email_id = ${sent.json.id} order by email`;
      const event = (type: string, r: { id: string; email: string }, extra: Record<string, unknown> = {}) => ({
        id: `evt_${type}_${r.id}`,
        org_id: org.organization.id,
        mode: 'test',
        type,
        email_id: sent.json.id,
        recipient_id: r.id,
        recipient: r.email,
        domain_id: e!.domain_id,
        dedupe_key: `${type}:${r.id}`,
        bounce_type: null,
        ...extra,
      });
      const rows = [
        event('email.sent', rcpts[0]!),
        event('email.sent', rcpts[1]!),
        event('email.delivered', rcpts[0]!),
        event('email.bounced', rcpts[1]!, { bounce_type: 'hard' }),
      ];
      await api.deps.sql`insert into events ${api.deps.sql(rows)} on conflict do nothing`;
      const json = await api.request('GET', '/metrics?days=1', { token: org.key.token });
      const live = json.json.series.at(-1);
      const overview = await member.get('/console?mode=test');
      expect(overview.text).to.match(/href="\/console\?mode=test"\s+aria-current="page"/);
      expect(/data-today="sent">(\d+)</.exec(overview.text)![1]).to.equal('2');
      expect(/data-today="bouncedHard">(\d+)</.exec(overview.text)![1]).to.equal('1');
      const metrics = await member.get('/console/metrics?mode=test&days=7');
      const totals: Record<string, number> = {};
      for (const m of metrics.text.matchAll(/data-total="(\w+)"[^>]*>([\d,]+)</g)) {
        totals[m[1]!] = Number(m[2]!.replace(/,/g, ''));
      }
      expect(totals).to.include({ sent: 2, delivered: 1, bouncedHard: 1 });
      expect(metrics.text).to.contain('Test-key mail');
      // The live figures do not move.
      const after = await api.request('GET', '/metrics?days=1', { token: org.key.token });
      expect(after.json.series.at(-1)).to.deep.equal(live);
      expect(json.json.series.at(-1).day).to.equal(day);
    });
  });

  describe('users', () => {
    it('lets every user change their own password, ending their other sessions', async () => {
      const created = await admin.post('/console/users', { email: `pw-${Date.now()}@example.test`, role: 'member' });
      const email = /(pw-\d+@example\.test) can now sign in/.exec(created.text)![1]!;
      const password = /data-password>([^<]+)</.exec(created.text)![1]!;
      const a = new ConsoleClient(api.url);
      const b = new ConsoleClient(api.url);
      await a.login(email, password);
      await b.login(email, password);
      await a.get('/console/account');
      const mismatch = await a.post('/console/account/password', {
        current: password,
        password: 'n'.repeat(12),
        confirm: 'm'.repeat(12),
      });
      expectPageError(mismatch, 422, 'validation_error');
      const wrong = await a.post('/console/account/password', {
        current: 'nope',
        password: 'n'.repeat(12),
        confirm: 'n'.repeat(12),
      });
      expectPageError(wrong, 403, 'forbidden');
      const ok = await a.post('/console/account/password', {
        current: password,
        password: 'n'.repeat(12),
        confirm: 'n'.repeat(12),
      });
      expect(ok.status).to.equal(303);
      expect((await a.get('/console')).status).to.equal(200);
      expect((await b.get('/console')).location).to.equal('/console/login');
      expectPageError(await new ConsoleClient(api.url).login(email, password), 401, 'login');
      expect((await new ConsoleClient(api.url).login(email, 'n'.repeat(12))).status).to.equal(303);
    });

    it('refuses a second user with the same email', async () => {
      const res = await admin.post('/console/users', { email: memberEmail.toUpperCase(), role: 'admin' });
      expectPageError(res, 409, 'conflict');
    });
  });

  describe('escaping', () => {
    it('answers NUL in a query, a path or a form field, and control characters in a name, with a 422 page', async () => {
      const responses = [
        await admin.get('/console/metrics?domain=a%00b'),
        await admin.post('/console/keys/key_a%00b/revoke'),
        await admin.post('/console/keys', { name: 'a\u0000b', permission: 'SEND', mode: 'live' }),
        await admin.post('/console/keys', { name: 'ci\nkey', permission: 'SEND', mode: 'live' }),
        await new ConsoleClient(api.url).post(
          '/console/login',
          { email: 'a\u0000@b.c', password: 'x' },
          { csrf: false },
        ),
      ];
      for (const res of responses) {
        expect(res.status).to.equal(422);
        expect(res.headers['content-type']).to.match(/^text\/html/);
      }
    });

    it('escapes names, reasons and URLs on every page', async () => {
      const sql = api.deps.sql;
      await sql`update organizations set name = ${`Org ${XSS}`}, sending_paused = true,
        sending_paused_reason = ${`reason ${XSS}`} where id = ${org.organization.id}`;
      await insertWebhook(sql, secretBox(api.config), {
        orgId: org.organization.id,
        url: `https://hooks.example.test/"><script>x</script>`,
        events: [],
        description: XSS,
        secret: 'whsec_test',
      });
      const minted = await admin.post('/console/keys', { name: XSS, permission: 'SEND', mode: 'live' });
      expect(minted.status).to.equal(201);
      const escaped = '&#60;script&#62;alert(1)&#60;/script&#62;';
      expect(minted.text).to.contain(escaped);
      const pages = [
        '/console',
        '/console/keys',
        '/console/metrics',
        '/console/domains',
        '/console/webhooks',
        '/console/users',
        '/console/account',
      ];
      // The console's own script tag is the only one a page may carry.
      const scripts = (text: string) =>
        text.replace('<script src="/console/assets/console.js" defer></script>', '').toLowerCase();
      for (const path of [...pages, '/console/metrics?domain=%3Cscript%3E', '/console/nope%3Cscript%3E']) {
        const res = await admin.get(path);
        expect(scripts(res.text), path).not.to.contain('<script');
      }
      for (const res of [minted, await member.get('/console/keys')])
        expect(scripts(res.text)).not.to.contain('<script');
      expect((await admin.get('/console/keys')).text).to.contain(escaped);
      const overview = await admin.get('/console');
      expect(overview.text).to.contain('data-paused="true"');
      expect(overview.text).to.contain(`reason ${escaped}`);
      expect((await admin.get('/console/webhooks')).text).to.contain(escaped);
    });
  });
});
