// The warm-key cache across web processes (DESIGN §3): a warm key needs no Postgres round trip,
// and revoke, rotate and org changes made through one instance reach another within 1 s.
import { expect } from 'chai';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { insertDomain } from '../../shared/db/domains.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

/** A TCP relay to Postgres that the test can cut, making Postgres unreachable for one instance. */
async function cuttableRelay(target: URL): Promise<{ url: (db: string) => string; cut(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  const cut = track(`pg relay :${port}`, async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  });
  return {
    url: (db: string) => {
      const u = new URL(target.toString());
      u.hostname = '127.0.0.1';
      u.port = String(port);
      u.pathname = `/${db}`;
      return u.toString();
    },
    cut,
  };
}

// Shorter than the cache's 30 s TTL: a change seen within it travelled by Redis pub/sub, not by
// the entry expiring; long enough for a loaded machine.
const INVALIDATION_MS = 10_000;

describe('warm-key cache across two web instances', () => {
  let a: TestApi;
  let b: TestApi;
  let org: SeededOrg;

  before(async () => {
    a = await startApi();
    b = await startApi({ db: a.db, prefix: a.config.redisPrefix });
    org = await seedOrg(a.deps.sql, { domains: [{ name: 'acme.test' }] });
  });
  after(async () => {
    await b.close();
    await a.close();
  });

  it('authorizes a warm key with no Postgres look-up', async () => {
    const k = await org.mint({ permission: 'SEND' });
    expect((await b.request('GET', '/keys/me', { token: k.token })).status).to.equal(200);
    const before = b.deps.auth.dbLookups;
    for (let i = 0; i < 15; i++) {
      const res = await b.request('GET', '/keys/me', { token: k.token });
      expect(res.status).to.equal(200);
    }
    expect(b.deps.auth.dbLookups).to.equal(before);
  });

  it('keeps serving a warm key while Postgres is unreachable for that instance', async () => {
    const relay = await cuttableRelay(new URL(a.db.url));
    const c = await startApi({ db: { ...a.db, url: relay.url(a.db.name) }, prefix: a.config.redisPrefix });
    try {
      const k = await org.mint({ permission: 'FULL', mode: 'test' });
      expect((await c.request('GET', '/keys/me', { token: k.token })).status).to.equal(200);
      await relay.cut();
      for (let i = 0; i < 5; i++) {
        const res = await c.request('GET', '/keys/me', { token: k.token });
        expect(res.status, res.text).to.equal(200);
        expect(res.json.id).to.equal(k.id);
      }
      // The same instance cannot look up a cold key: it says so instead of hanging.
      const cold = await org.mint({ permission: 'SEND' });
      const res = await c.request('GET', '/keys/me', { token: cold.token });
      expect(res.status).to.equal(503);
      expect(res.json.error.code).to.equal('unavailable');
    } finally {
      await relay.cut();
      await c.close();
    }
  });

  it('refuses a key revoked through the other instance before its cache entry expires', async () => {
    const k = await org.mint({ permission: 'SEND' });
    expect((await b.request('GET', '/keys/me', { token: k.token })).status).to.equal(200);
    const del = await a.request('DELETE', `/keys/${k.id}`, { token: org.key.token });
    expect(del.status).to.equal(200);
    const res = await waitFor(
      'the other instance to refuse the key',
      async () => {
        const r = await b.request('GET', '/keys/me', { token: k.token });
        return r.status === 401 && r;
      },
      INVALIDATION_MS,
    );
    expect(res.json.error).to.deep.equal({ code: 'unauthorized', message: 'API key has been revoked' });
  });

  it('refuses the old token of a key rotated with expires_in 0 before its cache entry expires, and takes the new one', async () => {
    const k = await org.mint({ permission: 'FULL' });
    expect((await b.request('GET', '/keys/me', { token: k.token })).status).to.equal(200);
    const rot = await a.request('POST', `/keys/${k.id}/rotate`, { token: org.key.token, body: { expires_in: 0 } });
    expect(rot.status).to.equal(200);
    await waitFor(
      'the other instance to refuse the old token',
      async () => {
        const r = await b.request('GET', '/keys/me', { token: k.token });
        return r.status === 401;
      },
      INVALIDATION_MS,
    );
    const fresh = await b.request('GET', '/keys/me', { token: rot.json.token });
    expect(fresh.status).to.equal(200);
    expect(fresh.json.id).to.equal(k.id);
  });

  it('shows an organization change (a new domain) on the other instance', async () => {
    const k = await org.mint({ permission: 'SEND' });
    const first = await b.request('GET', '/keys/me', { token: k.token });
    expect(first.json.domains).to.deep.equal(['acme.test']);
    await insertDomain(a.deps.sql, { orgId: org.organization.id, name: 'zeta.test', status: 'verified' });
    await a.deps.auth.invalidateOrg(org.organization.id);
    const res = await waitFor(
      'the other instance to see the new domain',
      async () => {
        const r = await b.request('GET', '/keys/me', { token: k.token });
        return Array.isArray(r.json?.domains) && r.json.domains.includes('zeta.test') && r;
      },
      INVALIDATION_MS,
    );
    expect(res.json.domains).to.have.members(['acme.test', 'zeta.test']);
  });
});
