import { expect } from 'chai';
import type { EventRow } from '../../shared/events.js';
import { clickUrl, openPixelUrl, signTrackingToken, unsubscribeUrl } from '../../shared/tracking.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { insertTrackedMessage, type TrackedMessage } from '../helpers/tracking-rows.js';

describe('tracking links', () => {
  let api: TestApi;
  let org: SeededOrg;
  let live: TrackedMessage;
  let test: TrackedMessage;
  let keyId: string;

  const params = (m: TrackedMessage) => ({
    baseUrl: api.url,
    secret: api.config.secretKey,
    emailId: m.emailId,
    recipientId: m.recipientId,
  });
  const pathOf = (url: string) => new URL(url).pathname;
  const events = (m: TrackedMessage, type: string) =>
    api.deps.sql<EventRow[]>`select * from events where recipient_id = ${m.recipientId} and type = ${type} order by id`;
  const recipientRow = async (m: TrackedMessage) =>
    (await api.deps.sql`select * from email_recipients where id = ${m.recipientId}`)[0]!;
  // Never follow a redirect: the destinations are not ours to contact.
  const get = (url: string) => fetch(url, { redirect: 'manual' });
  const postOneClick = (url: string, body = 'List-Unsubscribe=One-Click', type = 'application/x-www-form-urlencoded') =>
    fetch(url, { method: 'POST', redirect: 'manual', headers: { 'content-type': type }, body });
  // A token that is not good for the link is a plain 404 and never a redirect (a token that makes
  // the path leave the link's route, as '..' does, is the router's not_found).
  const expectMiss = async (res: Response, context?: string) => {
    expect(res.status, context).to.equal(404);
    expect(res.headers.get('location')).to.equal(null);
    const text = await res.text();
    if (text !== 'Not found\n') expect(JSON.parse(text).error.code, context).to.equal('not_found');
  };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    keyId = org.key.id;
    const base = { orgId: org.organization.id, domainId: org.domains['acme.test']!.id, domainName: 'acme.test' };
    live = await insertTrackedMessage(api.deps.sql, {
      ...base,
      keyId,
      recipient: 'Reader@Example.com',
      kind: 'receipt',
      provider: 'gmail',
    });
    test = await insertTrackedMessage(api.deps.sql, { ...base, mode: 'test', recipient: 'tester@example.com' });
  });
  after(async () => api.close());

  describe('open pixel', () => {
    it('answers a 43-byte GIF that is never cached and records email.opened once', async () => {
      const url = openPixelUrl(params(live));
      for (let i = 0; i < 2; i++) {
        const res = await get(url);
        expect(res.status).to.equal(200);
        expect(res.headers.get('content-type')).to.equal('image/gif');
        expect(res.headers.get('cache-control')).to.contain('no-store');
        const body = Buffer.from(await res.arrayBuffer());
        expect(body.length).to.equal(43);
        expect(body.subarray(0, 6).toString()).to.equal('GIF89a');
      }
      const rows = await events(live, 'email.opened');
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({
        org_id: org.organization.id,
        mode: 'live',
        email_id: live.emailId,
        recipient: 'reader@example.com',
        domain_id: org.domains['acme.test']!.id,
        key_id: keyId,
        kind: 'receipt',
        provider: 'gmail',
        url: null,
      });
      expect(rows[0]!.published_at).to.be.an.instanceOf(Date);
      const r = await recipientRow(live);
      expect(r.opened_at).to.be.an.instanceOf(Date);
      expect(r.last_event).to.equal('opened');
    });

    it('answers 404 to a tampered or foreign token', async () => {
      const url = openPixelUrl(params(live));
      const tampered = url.slice(0, -2) + (url.endsWith('AA') ? 'BB' : 'AA');
      await expectMiss(await get(tampered));
      const click = clickUrl({ ...params(live), url: 'https://example.com/' });
      await expectMiss(await get(click.replace('/t/c/', '/t/o/')));
    });
  });

  describe('click redirect', () => {
    it('redirects to the parsed form of a link holding a line break or non-Latin-1 text', async () => {
      const own = await insertTrackedMessage(api.deps.sql, {
        orgId: org.organization.id,
        domainId: org.domains['acme.test']!.id,
        domainName: 'acme.test',
        recipient: 'linkreader@example.com',
      });
      const url = clickUrl({ ...params(own), url: 'https://example.com/a\nb/中?q=ü' });
      const res = await get(url);
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('https://example.com/ab/%E4%B8%AD?q=%C3%BC');
    });

    it('redirects with 302 to the destination and records every click with its url', async () => {
      const dest = 'https://example.com/pricing?plan=pro&utm_source=mail#top';
      const url = clickUrl({ ...params(live), url: dest });
      for (let i = 0; i < 2; i++) {
        const res = await get(url);
        expect(res.status).to.equal(302);
        expect(res.headers.get('location')).to.equal(dest);
      }
      const rows = await events(live, 'email.clicked');
      expect(rows).to.have.length(2);
      expect(rows.map((e) => e.url)).to.deep.equal([dest, dest]);
      expect(rows[0]).to.include({ mode: 'live', provider: 'gmail', kind: 'receipt', key_id: keyId });
      expect(rows[0]!.dedupe_key).not.to.equal(rows[1]!.dedupe_key);
      expect((await recipientRow(live)).clicked_at).to.be.an.instanceOf(Date);
    });

    it('never redirects on a tampered, truncated or malformed token', async () => {
      const url = clickUrl({ ...params(live), url: 'https://example.com/a' });
      const [body, sig] = pathOf(url).slice('/t/c/'.length).split('.');
      // Re-point the payload at another site and keep the old signature.
      const forged = Buffer.from(
        JSON.stringify(['c', live.emailId, live.recipientId, 'https://evil.example/']),
      ).toString('base64url');
      for (const token of [
        `${forged}.${sig}`,
        `${body}.`,
        body!,
        `${body}.${sig}x`,
        'not-a-token',
        '..',
        `${body}.${'A'.repeat(22)}`,
      ]) {
        await expectMiss(await get(`${api.url}/t/c/${encodeURIComponent(token)}`), token);
      }
    });

    it('cannot carry a javascript: or data: destination, even when signed', async () => {
      expect(() => clickUrl({ ...params(live), url: 'javascript:alert(1)' })).to.throw();
      expect(() => clickUrl({ ...params(live), url: 'data:text/html,hi' })).to.throw();
      // A token signed with the real secret but built around the check still yields 404.
      const { createHmac } = await import('node:crypto');
      const key = createHmac('sha256', api.config.secretKey).update('tern/tracking-token/v1').digest();
      const body = Buffer.from(JSON.stringify(['c', live.emailId, live.recipientId, 'javascript:alert(1)'])).toString(
        'base64url',
      );
      const sig = createHmac('sha256', key).update(body).digest().subarray(0, 16).toString('base64url');
      await expectMiss(await get(`${api.url}/t/c/${body}.${sig}`));
    });

    it('still redirects when the message is gone, recording nothing', async () => {
      const url = clickUrl({ ...params(live), recipientId: 'rcp_gone', url: 'https://example.com/x' });
      const res = await get(url);
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('https://example.com/x');
    });
  });

  describe('one-click unsubscribe', () => {
    it('GET shows a confirmation form and changes nothing', async () => {
      const url = unsubscribeUrl(params(live));
      const res = await get(url);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.contain('text/html');
      const html = await res.text();
      expect(html).to.contain('<form method="post"');
      expect(html).to.contain(`action="${pathOf(url)}"`);
      expect(html).to.contain('name="List-Unsubscribe" value="One-Click"');
      expect(await events(live, 'email.unsubscribed')).to.have.length(0);
      expect((await recipientRow(live)).unsubscribed_at).to.equal(null);
    });

    it('POST without the RFC 8058 body is refused', async () => {
      const res = await postOneClick(unsubscribeUrl(params(live)), 'foo=bar');
      expect(res.status).to.equal(400);
      expect(await res.text()).to.contain('This request could not be understood.');
      expect(await events(live, 'email.unsubscribed')).to.have.length(0);
    });

    it('POST List-Unsubscribe=One-Click unsubscribes once and suppresses a live recipient for the domain', async () => {
      const url = unsubscribeUrl(params(live));
      for (let i = 0; i < 2; i++) {
        const res = await postOneClick(url);
        expect(res.status).to.equal(200);
        expect(await res.text()).to.contain('unsubscribed');
      }
      const rows = await events(live, 'email.unsubscribed');
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({ mode: 'live', recipient: 'reader@example.com', provider: 'gmail' });
      expect((await recipientRow(live)).unsubscribed_at).to.be.an.instanceOf(Date);
      const sup = await api.deps.sql`select * from suppressions where org_id = ${org.organization.id}`;
      expect(sup).to.have.length(1);
      expect(sup[0]).to.include({
        email: 'reader@example.com',
        reason: 'unsubscribe',
        domain_id: org.domains['acme.test']!.id,
        source_email_id: live.emailId,
      });
    });

    it('accepts the multipart form a mailbox provider may send; a test message adds no suppression', async () => {
      const boundary = 'xYzZY';
      const body = `--${boundary}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--${boundary}--\r\n`;
      const res = await postOneClick(unsubscribeUrl(params(test)), body, `multipart/form-data; boundary=${boundary}`);
      expect(res.status).to.equal(200);
      const rows = await events(test, 'email.unsubscribed');
      expect(rows).to.have.length(1);
      expect(rows[0]!.mode).to.equal('test');
      const sup = await api.deps.sql`select * from suppressions where email = 'tester@example.com'`;
      expect(sup).to.have.length(0);
    });

    it('answers 404 to a token of another kind or for another recipient', async () => {
      const openToken = pathOf(openPixelUrl(params(live))).slice('/t/o/'.length);
      await expectMiss(await get(`${api.url}/t/u/${openToken}`));
      await expectMiss(await postOneClick(`${api.url}/t/u/${openToken}`));
      const otherSecret = signTrackingToken('another-install-secret-0123456789abcdef', {
        kind: 'u',
        emailId: live.emailId,
        recipientId: live.recipientId,
      });
      await expectMiss(await postOneClick(`${api.url}/t/u/${otherSecret}`));
    });
  });

  it('does not need an API key and leaves /api/v1 as it was', async () => {
    expectError(await api.request('GET', '/keys/me'), 401, 'unauthorized');
  });
});
